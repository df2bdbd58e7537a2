"""Framework integrations, each importable only with its framework installed:

- ``andal.contrib.django``: a Django app (``INSTALLED_APPS``): ``enqueue`` on Django's own
  connection (inside ``transaction.atomic()`` the job commits with the request), settings in
  ``settings.ANDAL``, and ``manage.py andal_worker MODULE`` (extra ``andal-pg[django]``).
- ``andal.contrib.fastapi``: ``lifespan(dsn)`` opens an ``andal.AsyncClient`` on
  ``app.state`` (and may run a worker beside the app), ``get_client`` is the route
  dependency (extra ``andal-pg[fastapi]``).

docs/integrations.md has both, and a Flask / plain WSGI recipe.
"""
