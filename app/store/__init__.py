"""The project file: one SQLite database holding files, suggestions and every decision."""
