"""tilewise.isa"""
