"""The data model: run data, the record-line schema and its one fold, record files, packing, settings, targets, statistics, intervals."""
