"""Save: a root -> records, in one walk (reflective, batched or generated)."""
