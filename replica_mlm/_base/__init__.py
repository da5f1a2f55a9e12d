"""The base floor: input checks, keywords, progress bars, threads, the process pool, the one writer and
reader of files, run folders, statistics, errors and the resumable sweep (docs/architecture.md)."""
