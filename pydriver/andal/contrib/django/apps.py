"""The Django app: add ``"andal.contrib.django"`` to ``INSTALLED_APPS`` for the
``andal_worker`` management command."""

from __future__ import annotations

from django.apps import AppConfig


class AndalConfig(AppConfig):
    name = "andal.contrib.django"
    label = "andal"
    verbose_name = "andal job queue"
