"""Knowledge base pages: problems, one problem's story, search, runbooks, export and import."""
import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from jobs.listing import choices, page_of, query_filters
from jobs.models import Diagnosis, Team
from knowledge import roles, search, services, transfer
from knowledge.forms import ImportForm, MergeForm, ProblemForm, RunbookForm, SearchForm, TitleForm
from knowledge.models import GroupingAction, Problem, Runbook
from knowledge.runbooks import DEFAULT_RUNBOOKS, default_runbook

PAGE_SIZE = 50
INCIDENT_COLUMNS = ("id", "title", "job_id", "status", "category", "exception", "failing_rank", "summary",
                    "cluster", "launcher", "created_at")
SUGGESTION_SOURCES = 5


def _team_ids(user) -> list[int]:
    return Team.objects.ids_of_member(user)


def _search_filters(request) -> search.Filters:
    return search.Filters(**query_filters(SearchForm(request.GET)))


@login_required
def problem_list(request):
    filters = _search_filters(request)
    team_ids = _team_ids(request.user)
    page, query_string = page_of(request, Problem.objects.search(team_ids, filters), PAGE_SIZE)
    return render(request, "knowledge/problem_list.html", {
        "page": page, "problems": page.object_list, "filters": filters,
        "filtering": filters.any(), "query_string": query_string,
        "statuses": Problem.Status.choices, "categories": choices(Problem.objects.filter(team_id__in=team_ids),
                                                                  "category"),
    })


@login_required
def search_page(request):
    filters = _search_filters(request)
    team_ids = _team_ids(request.user)
    results = search.search(team_ids, filters) if filters.any() else None
    return render(request, "knowledge/search.html", {
        "filters": filters, "filtering": filters.any(), "results": results, "statuses": Problem.Status.choices,
        "categories": choices(Problem.objects.filter(team_id__in=team_ids), "category"),
    })


def suggested_fixes(problem: Problem) -> list[dict]:
    """The distinct fixes the engine suggested for the problem's most recent incidents."""
    incident_ids = list(problem.occurrence_links.order_by("-seen_at").values_list("incident_id", flat=True)
                        [:SUGGESTION_SOURCES])
    seen, fixes = set(), []
    for data in Diagnosis.objects.filter(incident_id__in=incident_ids).values_list("data", flat=True):
        for fix in (data or {}).get("fixes") or []:
            if not isinstance(fix, dict):
                continue
            key = (str(fix.get("kind") or ""), str(fix.get("title") or ""))
            if key[0] and key not in seen:
                seen.add(key)
                fixes.append({"kind": key[0], "title": key[1] or key[0]})
    return fixes


def story(problem: Problem) -> dict:
    """What the problem page tells: occurrences per day, affected jobs, clusters and ranks."""
    links = problem.occurrence_links.all()
    per_day = list(links.annotate(day=TruncDate("seen_at")).values("day").annotate(n=Count("id")).order_by("day"))
    return {
        "chart": {"days": [row["day"].isoformat() for row in per_day if row["day"]],
                  "counts": [row["n"] for row in per_day if row["day"]]},
        "jobs": list(links.exclude(job_id="").values("job_id").annotate(n=Count("id")).order_by("-n", "job_id")[:20]),
        "clusters": list(links.exclude(cluster="").values("cluster").annotate(n=Count("id")).order_by("-n")[:20]),
        "ranks": list(links.exclude(failing_rank=None).values("failing_rank").annotate(n=Count("id"))
                      .order_by("-n", "failing_rank")[:20]),
    }


def _visible_problem(request, pk) -> Problem:
    return get_object_or_404(Problem.objects.visible_to(request.user).select_related("resolved_by"), pk=pk)


def _need(request, problem_or_team_id, action):
    team_id = getattr(problem_or_team_id, "team_id", problem_or_team_id)
    if not roles.may(request.user, team_id, action):
        raise PermissionDenied("Your role in this team does not allow that.")


@login_required
def problem_detail(request, pk):
    problem = _visible_problem(request, pk)
    if problem.merged_into_id and request.method == "GET":
        messages.info(request, f"Problem #{problem.pk} was merged into this one.")
        return redirect("knowledge:problem_detail", pk=problem.merged_into_id)
    fixes = suggested_fixes(problem)
    form = ProblemForm(request.POST if request.method == "POST" else None, instance=problem, suggested=fixes)
    if request.method == "POST":
        _need(request, problem, roles.RESOLVE)
        if form.is_valid():
            fix_kind, fix_summary = form.fix()
            services.update(problem, user=request.user, status=form.cleaned_data["status"],
                            resolution=form.cleaned_data["resolution"], fix_kind=fix_kind, fix_summary=fix_summary)
            messages.success(request, "Saved.")
            return redirect("knowledge:problem_detail", pk=problem.pk)
    incidents = problem.incidents.only(*INCIDENT_COLUMNS).order_by("-created_at", "-id")
    page = Paginator(incidents, PAGE_SIZE).get_page(request.GET.get("page"))
    history = GroupingAction.objects.filter(Q(source=problem) | Q(target=problem)).select_related(
        "actor", "undone_by", "source", "target")[:50]
    return render(request, "knowledge/problem_detail.html", {
        "problem": problem, "form": form, "title_form": TitleForm(initial={"title": problem.title}),
        "merge_form": MergeForm(), "page": page, "incidents": page.object_list, "query_string": "",
        "story": story(problem), "fixes": fixes, "history": history,
        "merged": problem.merged_problems.order_by("-last_seen")[:50],
        "can": roles.abilities(request.user, problem.team_id),
        "runbook": services.runbook_for(problem.team_id, problem.category),
    })


@login_required
@require_POST
def problem_rename(request, pk):
    problem = _visible_problem(request, pk)
    _need(request, problem, roles.RESOLVE)
    form = TitleForm(request.POST)
    if form.is_valid():
        services.rename(problem, form.cleaned_data["title"])
        messages.success(request, "Title saved.")
    else:
        messages.error(request, "Keep the title under 200 characters.")
    return redirect("knowledge:problem_detail", pk=problem.pk)


@login_required
@require_POST
def problem_merge(request, pk):
    problem = _visible_problem(request, pk)
    _need(request, problem, roles.MERGE)
    form = MergeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(form.errors.get("problems", ["Give problem numbers."])))
        return redirect("knowledge:problem_detail", pk=problem.pk)
    ids = [pk for pk in form.cleaned_data["problems"] if pk != problem.pk]
    sources = list(Problem.objects.filter(team_id=problem.team_id, pk__in=ids).live())
    if len(sources) != len(ids) or not sources:
        messages.error(request, "Only other, unmerged problems of this team can be merged in.")
        return redirect("knowledge:problem_detail", pk=problem.pk)
    services.merge(problem, sources, user=request.user)
    messages.success(request, f"Merged {len(sources)} problem{'s' if len(sources) > 1 else ''} into this one.")
    return redirect("knowledge:problem_detail", pk=problem.pk)


@login_required
@require_POST
def problem_split(request, pk):
    problem = _visible_problem(request, pk)
    _need(request, problem, roles.MERGE)
    ids = [value for value in request.POST.getlist("incidents") if value.isdigit()]
    try:
        new, _action = services.split(problem, ids, user=request.user, title=request.POST.get("title", "")[:200])
    except services.GroupingError as error:
        messages.error(request, str(error))
        return redirect("knowledge:problem_detail", pk=problem.pk)
    messages.success(request, f"Split {len(ids)} incident{'s' if len(ids) > 1 else ''} off into problem #{new.pk}.")
    return redirect("knowledge:problem_detail", pk=new.pk)


@login_required
@require_POST
def action_undo(request, pk):
    action = get_object_or_404(GroupingAction.objects.filter(team_id__in=_team_ids(request.user)), pk=pk)
    _need(request, action.team_id, roles.MERGE)
    try:
        services.undo(action, user=request.user)
        messages.success(request, f"Undid the {action.kind}.")
    except services.GroupingError as error:
        messages.error(request, str(error))
    return redirect("knowledge:problem_detail", pk=action.source_id)


def _current_team(request) -> Team:
    teams = Team.objects.of_member(request.user).order_by("memberships__created_at")
    wanted = request.GET.get("team") or request.POST.get("team")
    team = teams.filter(slug=wanted).first() if wanted else teams.first()
    if team is None:
        raise Http404("You are not a member of any team.")
    return team


@login_required
def runbook_list(request):
    team = _current_team(request)
    edited = {row.category: row for row in Runbook.objects.filter(team=team).select_related("updated_by")}
    books = [{"category": category, "title": title, "edited": edited.get(category)}
             for category, (title, _body) in DEFAULT_RUNBOOKS.items()]
    return render(request, "knowledge/runbook_list.html", {"team": team, "runbooks": books})


@login_required
def runbook_detail(request, category):
    if category not in DEFAULT_RUNBOOKS:
        raise Http404("No such category.")
    team = _current_team(request)
    runbook = services.runbook_for(team.pk, category)
    can_edit = roles.may(request.user, team.pk, roles.RUNBOOK)
    form = RunbookForm(request.POST if request.method == "POST" else None, initial={"body": runbook["body"]})
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only team admins edit runbooks.")
        if request.POST.get("reset"):
            Runbook.objects.filter(team=team, category=category).delete()
            messages.success(request, "Back to the runbook shipped with Triage.")
            return redirect("knowledge:runbook_detail", category=category)
        if form.is_valid():
            Runbook.objects.update_or_create(team=team, category=category,
                                             defaults={"body": form.cleaned_data["body"], "updated_by": request.user})
            messages.success(request, "Runbook saved.")
            return redirect("knowledge:runbook_detail", category=category)
    return render(request, "knowledge/runbook_detail.html", {
        "team": team, "runbook": runbook, "form": form, "can_edit": can_edit,
        "shipped": default_runbook(category)[1],
        "problems": Problem.objects.filter(team=team, category=category).live().order_by("-last_seen")[:10],
    })


@login_required
def transfer_page(request):
    team = _current_team(request)
    can_import = roles.may(request.user, team.pk, roles.IMPORT)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST":
        if not can_import:
            raise PermissionDenied("Only team admins import a knowledge base.")
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                if upload.size > 20 * 1024 * 1024:
                    raise transfer.TransferError("the file is larger than 20 MB")
                document = json.loads(upload.read().decode("utf-8"))
                counts = transfer.import_team(team, document, user=request.user)
            except (UnicodeDecodeError, json.JSONDecodeError):
                messages.error(request, "The file is not JSON.")
            except transfer.TransferError as error:
                messages.error(request, f"Nothing imported: {error}.")
            else:
                messages.success(request, "Imported: {problems_created} new problems, {problems_updated} updated, "
                                          "{runbooks} runbooks.".format(**counts))
                return redirect("knowledge:transfer")
    return render(request, "knowledge/transfer.html", {"team": team, "form": form, "can_import": can_import})


@login_required
def export_download(request):
    team = _current_team(request)
    body = json.dumps(transfer.export_team(team), indent=1)
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="knowledge-{slugify(team.slug)}.json"'
    return response
