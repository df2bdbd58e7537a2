-- queue.category_limits: every category andal knows (one that a job was enqueued or
-- requeued in, or that set_category_limit named) with its limit: at most max_running of its
-- jobs run at once; 0 means the category is paused. Read-only, for operators and dashboards.
create or replace function queue.category_limits()
returns table (category text, max_running int)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select c.category, c.max_running from queue.categories as c order by c.category
$$;

comment on function queue.category_limits() is
'Every known category and its limit (max_running; 0: paused).';
revoke all on function queue.category_limits() from public;
grant execute on function queue.category_limits() to andal_admin, andal_worker, andal_monitor;
