"""What a file may make a load do (docs/security.md): checks on the values a load
builds (loadcheck), budgets summed over a whole file (limits)."""
