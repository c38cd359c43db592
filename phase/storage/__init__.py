"""Storage that knows nothing of the results schema: how phase reads and writes any file.

    safepath     paths confined to a directory: names a file may not escape through
    jsonread     strict JSON reading: regular UTF-8 files, no duplicate keys, bounded nesting
    claim        one writer per file: the lock a command holds, default names chosen atomically
    writing      exclusive creation and atomic replacement
    outputs      every file or directory phase creates: claimed first, created exclusively
    cache_entry  entries of a derived-data cache, bound to what they were derived from
    errors       StorageError, the one error these raise (phase.results calls it ResultsError)
"""
