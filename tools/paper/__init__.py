"""The paper's claims, tested at Multi30k scale: Table 3's variations swept with one command
(`tools/ablate.py`), their table and figure, and Table 1's per-layer costs measured."""
