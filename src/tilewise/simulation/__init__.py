"""The loop-nest walker: every tile transfer and compute step of a mapping, in order; simulate counts them to check the model."""
