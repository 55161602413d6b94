"""tilewise.model"""
