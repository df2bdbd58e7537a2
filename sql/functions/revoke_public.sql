-- Applied after every other function file (it is the last line of manifest.txt): PUBLIC
-- can execute nothing in andal's schemas, even a function whose file forgot
-- its REVOKE. 0001 cannot ensure this with default privileges: a per-schema default
-- privilege only adds to the global default, which grants EXECUTE on functions to PUBLIC.
revoke execute on all functions in schema queue from public;
revoke execute on all functions in schema cache from public;
-- The install's roles use both schemas (migrations 0001 and 0007 granted it first). Granted
-- again at every apply of the functions: a database restored where its roles did not exist
-- (pg_restore into a new cluster) gets it back with the functions' own grants.
grant usage on schema queue, cache to andal_producer, andal_worker, andal_admin, andal_monitor;
