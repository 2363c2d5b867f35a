"""Knowledge base pages: the team's problems and one problem with its incidents."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect, render

from knowledge import services
from knowledge.forms import ProblemForm
from knowledge.models import Problem

PAGE_SIZE = 50
INCIDENT_COLUMNS = ("id", "title", "job_id", "status", "category", "exception", "failing_rank", "summary",
                    "cluster", "launcher", "created_at")


def _filters(request) -> dict:
    return {key: request.GET.get(key, "").strip()[:200] for key in ("q", "status", "category")}


def filtered_problems(user, filters: dict):
    problems = Problem.objects.visible_to(user)
    if filters["status"]:
        problems = problems.filter(status=filters["status"])
    if filters["category"]:
        problems = problems.filter(category=filters["category"])
    if filters["q"]:
        query = filters["q"]
        problems = problems.filter(
            Q(title__icontains=query) | Q(exception__icontains=query) | Q(resolution__icontains=query)
            | Q(category__icontains=query) | Q(fingerprint__istartswith=query)
        )
    return problems.order_by("-last_seen", "-id")


@login_required
def problem_list(request):
    filters = _filters(request)
    page = Paginator(filtered_problems(request.user, filters), PAGE_SIZE).get_page(request.GET.get("page"))
    query_without_page = request.GET.copy()
    query_without_page.pop("page", None)
    categories = (Problem.objects.visible_to(request.user).order_by("category")
                  .values_list("category", flat=True).distinct()[:200])
    return render(request, "knowledge/problem_list.html", {
        "page": page,
        "problems": page.object_list,
        "filters": filters,
        "filtering": any(filters.values()),
        "query_string": query_without_page.urlencode(),
        "statuses": Problem.Status.choices,
        "categories": list(categories),
    })


@login_required
def problem_detail(request, pk):
    problem = get_object_or_404(
        Problem.objects.visible_to(request.user).select_related("resolved_by"), pk=pk
    )
    form = ProblemForm(request.POST if request.method == "POST" else None, instance=problem)
    if request.method == "POST" and form.is_valid():
        services.update(problem, user=request.user, status=form.cleaned_data["status"],
                        resolution=form.cleaned_data["resolution"])
        messages.success(request, "Saved.")
        return redirect("knowledge:problem_detail", pk=problem.pk)
    incidents = problem.incidents.only(*INCIDENT_COLUMNS).order_by("-created_at", "-id")
    page = Paginator(incidents, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "knowledge/problem_detail.html", {
        "problem": problem,
        "form": form,
        "page": page,
        "incidents": page.object_list,
        "query_string": "",
        "related": services.related(problem.team_id, problem.category, problem.exception, exclude=problem.pk),
    })
