"""Execute a mapping numerically (the blocked executor), its numpy reference, and solution files."""
