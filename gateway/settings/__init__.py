"""Settings: one table of declarations (table.py) and the sources that fill it (sources.py)."""
