"""The wire format (docs/format.md): records <-> bytes, and the engine's loops."""
