"""The database backend: Django's PostgreSQL one, with its pool's check (base.py)."""
