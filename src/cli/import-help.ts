// Apart from the command, so that every other command's start need not load what an import checks rows with (the API's field rules and their OpenAPI decorators).
export const IMPORT_HELP = `Usage: npm run cli -- import <profiles|customers> <file> --account <id> [--dry-run]

Moves records in from another system, keeping their ids and creation times. The file is NDJSON
(one JSON object a line; .ndjson or .jsonl, or any name whose first character is "{") or CSV with a
header row (.csv, or anything else), as a CRUD export gives: the API's request fields of the kind,
plus each record's "id" (a UUID, 36 characters) and "created" (whole seconds since the epoch, as
the API answers it). Every row is checked as the API checks a create, with its messages; a
profile's slug must be free in the service and not taken by an earlier row of the file.

Each record keeps its id and its created time: its history starts with its Created event at that
time, showing who imported it (the OS user), when and from which file; the change feed tells it
as customer.created / profile.created. Running the same file again creates nothing twice: a row
whose record is in with the same values is skipped, one with other values is refused. An import
stopped (Ctrl-C, a crash, kill -9) is finished by running it again.

Progress goes to stderr (a line redrawn on a terminal, a line every few seconds otherwise);
each refused row to stdout, by line number and field, then the report: rows read, created,
skipped, refused. Once the rows are in, the command waits until the read models and the change
feed have them (it folds them itself when the service is not running). Exit 0 when no row was
refused, 1 otherwise, 130 when interrupted.

Its memory is sized to the container's limit, or MEMORY_LIMIT, as the service's is (its batches,
SQLite's page caches, the heap): it says what it chose on stderr (docs/operators.md, "Memory").

Options:
  --account <id>   The account the records belong to (as ACCESS_TOKENS names it)
  --dry-run        Check every row, against the store too, and write nothing
  --help           This help
`;
