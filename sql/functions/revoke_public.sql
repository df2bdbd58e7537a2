-- Applied after every other function file (it is the last line of manifest.txt): PUBLIC
-- can execute nothing in andal's schemas, even a function whose file forgot
-- its REVOKE. 0001 cannot ensure this with default privileges: a per-schema default
-- privilege only adds to the global default, which grants EXECUTE on functions to PUBLIC.
revoke execute on all functions in schema queue from public;
revoke execute on all functions in schema cache from public;
