from django.urls import path

from agreement import views

urlpatterns = [
    path(
        "projects/<int:project_id>/agreement/",
        views.agreement_report_page,
        name="agreement_report",
    ),
    path("projects/<int:project_id>/audit/", views.label_audit_page, name="label_audit"),
    path(
        "projects/<int:project_id>/simulate/",
        views.policy_simulator_page,
        name="policy_simulator",
    ),
]
