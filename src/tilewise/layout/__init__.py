"""tilewise.layout"""
