"""`andal web`: a dashboard of the queues, dead letters and workers, in a browser.

Install with the ``web`` extra (``pip install 'andal-pg[web]'``); docs/web.md tells how to run
it, its roles and how to put it behind a reverse proxy. Importing this package needs none of
the web libraries: ``andal.web.app`` does.
"""
