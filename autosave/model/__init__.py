"""The type model: which classes exist and are trusted, what an object is made of,
which saver a class gets, what a load may call, and versions."""
