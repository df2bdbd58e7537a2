-- PUBLIC gets nothing on the router; andal's roles call the rules and PL/Proxy's
-- configuration (the generated functions are granted as on the partitions).
revoke all on all functions in schema andal_router from public;
revoke all on all functions in schema plproxy from public;
revoke all on all tables in schema andal_router from public;
grant usage on schema andal_router, plproxy
to andal_producer, andal_worker, andal_admin, andal_monitor;
grant execute on all functions in schema andal_router
to andal_producer, andal_worker, andal_admin, andal_monitor;
revoke all on function andal_router._bump_version() from andal_producer, andal_worker,
andal_admin, andal_monitor;
grant execute on all functions in schema plproxy
to andal_producer, andal_worker, andal_admin, andal_monitor;
grant select on andal_router.modes to andal_producer, andal_worker, andal_admin, andal_monitor;
