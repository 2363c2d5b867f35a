"""Story: a resolution written in Markdown renders as formatted text, and nothing in it can run."""
import re

import pytest
from django.urls import reverse

from knowledge.markdown import render
from knowledge.models import Problem

ATTACKS = [
    "<script>alert(1)</script>",
    "[click me](javascript:alert(1))",
    "[click me](JaVaScRiPt:alert(1))",
    "<img src=x onerror=alert(1)>",
    "![chart](x onerror=alert(1))",
    '<a href="javascript:alert(1)">raw link</a>',
    "<iframe src=//evil.example></iframe>",
    '<div onclick="alert(1)">hi</div>',
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_nothing_executable_survives(attack):
    html = render(f"Before\n\n{attack}\n\nAfter")
    lowered = html.lower()
    for tag in ("<script", "<iframe", "<img", "<div"):
        assert tag not in lowered
    assert not re.search(r'<a\s[^>]*href="\s*(?:javascript|data):', lowered)  # typed HTML stays text
    assert not re.search(r"<[^>]*\son\w+\s*=", lowered)  # no event handler on any real tag
    assert "Before" in html and "After" in html


def test_formatting_people_use_survives():
    html = render("**Fix:** lower the batch.\n\n- step one\n- step `two`\n\n```\ntorchrun --nproc 8 train.py\n```\n\n"
                  "[runbook](https://wiki.example.org/oom)")
    assert "<strong>Fix:</strong>" in html and "<li>step <code>two</code></li>" in html
    assert "<pre><code>torchrun --nproc 8 train.py" in html
    assert '<a href="https://wiki.example.org/oom" rel="noopener noreferrer nofollow">runbook</a>' in html


def test_an_empty_resolution_renders_nothing():
    assert render("") == "" and render("   \n") == ""


@pytest.mark.django_db
def test_the_problem_page_and_the_api_serve_it_sanitised(alice_client, alpha, recorded_incident, api_as):
    recorded_incident(alpha)
    problem = Problem.objects.get()
    problem.resolution = "**done** <script>alert('x')</script> [x](javascript:alert(1)) <img src=x onerror=alert(2)>"
    problem.save()
    page = alice_client.get(reverse("knowledge:problem_detail", args=[problem.pk])).content.decode()
    section = page[page.index('id="resolution"'):page.index("</section>", page.index('id="resolution"'))]
    assert "<strong>done</strong>" in section
    assert "<script>alert" not in section and 'href="javascript' not in section and "<img" not in section
    body = api_as(alpha).get(f"/api/v1/problems/{problem.pk}/").json()
    assert body["resolution"] == problem.resolution  # the source, as written
    assert "<strong>done</strong>" in body["resolution_html"] and "<script" not in body["resolution_html"]
    assert 'href="javascript' not in body["resolution_html"]
