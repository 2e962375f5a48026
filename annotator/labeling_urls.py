from django.urls import path  # noqa: F401

# Labeling, the disagreement queue and resolutions (issue 4).
urlpatterns: list = []
