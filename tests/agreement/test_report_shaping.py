"""The agreement report page's shaping (agreement.report_page), on small reports written by
hand: the heat map's classes, the chart's series, the reading scale and the accuracy column."""

from __future__ import annotations

from django.utils import translation

from agreement.report_page import annotators_with_accuracy, heat_map, level_chart, reading_scale


def test_the_heat_map_scales_every_cell_to_the_largest_count():
    confusions = {
        "themes": ["C.1", "C.2"],
        "names": ["Crash", "Hang"],
        "matrix": [[0, 3], [9, 1]],
    }
    heat = heat_map(confusions)
    assert [(row["code"], row["name"]) for row in heat] == [("C.1", "Crash"), ("C.2", "Hang")]
    # Nine classes above zero: a count c of a largest 9 gets class ceil(9 c / 9) = c.
    assert [[(c["value"], c["cls"]) for c in row["cells"]] for row in heat] == [
        [(0, "heat-0"), (3, "heat-3")],
        [(9, "heat-9"), (1, "heat-1")],
    ]


def test_a_single_confusion_among_many_still_shows():
    heat = heat_map({"themes": ["A.1", "A.2"], "names": ["a", "b"], "matrix": [[1, 0], [0, 400]]})
    # 1 of 400 rounds up to the palest colour, never to "none".
    assert heat[0]["cells"][0]["cls"] == "heat-1"
    assert heat[1]["cells"][1]["cls"] == "heat-9"


def test_no_confusions_no_rows():
    assert heat_map({"themes": [], "names": [], "matrix": []}) == []


def test_the_chart_has_kappa_and_alpha_per_group_in_level_order():
    report = {
        "levels": ["type", "theme", "sub_theme"],
        "groups": [
            {
                "code": "C",
                "name": "Bug",
                "levels": {
                    "sub_theme": {"kappa": 0.41, "alpha": 0.45},
                    "type": {"kappa": None, "alpha": None},
                    "theme": {"kappa": 0.52, "alpha": 0.6},
                },
            },
            {
                "code": "all",
                "name": "All issues",
                "levels": {
                    "type": {"kappa": 0.9, "alpha": 0.91},
                    "theme": {"kappa": 0.7, "alpha": 0.71},
                    "sub_theme": {"kappa": 0.5, "alpha": 0.52},
                },
            },
        ],
    }
    assert level_chart(report) == {
        "levels": ["type", "theme", "sub-theme"],
        "groups": [
            {"name": "Bug", "kappa": [None, 0.52, 0.41], "alpha": [None, 0.6, 0.45]},
            {"name": "All issues", "kappa": [0.9, 0.7, 0.5], "alpha": [0.91, 0.71, 0.52]},
        ],
    }
    # Shown on the page: the report's own words in the reader's language, the taxonomy's
    # names ("Bug" is the type's name here, data) as written.
    with translation.override("zh-hans"):
        chart = level_chart(report)
    assert chart["levels"] == ["类型", "主题", "子主题"]
    assert [g["name"] for g in chart["groups"]] == ["Bug", "全部议题"]


def test_the_reading_scale_is_landis_and_koch_as_ranges():
    words = [(round(low, 2), round(min(high, 1.0), 2), word) for low, high, word in reading_scale()]
    assert words == [
        (0.0, 0.2, "slight"),
        (0.2, 0.4, "fair"),
        (0.4, 0.6, "moderate"),
        (0.6, 0.8, "substantial"),
        (0.8, 1.0, "almost perfect"),
    ]


def test_the_accuracy_column_only_when_the_viewer_may_see_it():
    annotators = [{"pseudonym": "rater-1", "labels": 10}, {"pseudonym": "rater-2", "labels": 4}]
    lead_view = annotators_with_accuracy(annotators, {"rater-1": 0.93})
    assert lead_view == [
        {"pseudonym": "rater-1", "labels": 10, "model_accuracy": 0.93},
        {"pseudonym": "rater-2", "labels": 4, "model_accuracy": None},
    ]
    researcher_view = annotators_with_accuracy(annotators, None)
    assert [a["model_accuracy"] for a in researcher_view] == [None, None]
