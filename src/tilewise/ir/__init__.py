"""tilewise.ir"""
