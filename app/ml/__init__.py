"""Machine learning: the base encoder cache, the punctuation model, its training and inference."""
