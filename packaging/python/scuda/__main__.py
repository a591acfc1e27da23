"""`python -m scuda ...` is the `scuda` command."""

from scuda import main

main()
