"""The interview codebook: CSV in, CSV out, unchanged; bad rows named by line and column."""

import pytest
from django.utils import translation

from interviews.codebook import COLUMNS, CodebookError, export_csv, import_csv
from interviews.models import CodebookEntry, Participant

pytestmark = pytest.mark.django_db

HEADER = ",".join(COLUMNS)
CODEBOOK = (
    HEADER
    + "\n"
    + "\n".join(
        [
            'U1,User,Beginner (<1 year),MindSpore on Ascend,Part II: questions,"I once tried to '
            'install MindSpeed, but the image lacked Apex.",A.1; A.1.i,Installation blocks '
            "beginners",
            "U2,User,Experienced (3 years),DeepSpeed ZeRO3,Part II: questions,Loading failed: "
            "each GPU only stores partial weights.,A.2.ii; A.3,Undocumented sharding behaviour",
            'D1,Developer,Senior (8 years),PyTorch,Part III: bugs,"""Once the model blows up, '
            'users lose trust immediately.""",C.2; C.4.i; C.4.ii,Correctness first',
            "U1,User,Beginner (<1 year),MindSpore on Ascend,Part III: bugs,Compute capability "
            "mismatch on my GPU,C.1.v,",
        ]
    )
    + "\n"
)


def test_codebook_round_trip(project):
    assert import_csv(project, "\ufeff" + CODEBOOK) == 4
    assert export_csv(project) == CODEBOOK
    u1 = Participant.objects.get(code="U1")
    assert (u1.kind, u1.experience) == ("user", "beginner")
    assert Participant.objects.get(code="D1").experience == "experienced"
    entry = CodebookEntry.objects.get(participant__code="D1")
    assert sorted(n.code for n in entry.nodes.all()) == ["C.2", "C.4.i", "C.4.ii"]
    assert entry.quote == '"Once the model blows up, users lose trust immediately."'
    # Importing the export again with replace gives the same codebook.
    import_csv(project, export_csv(project), replace=True)
    assert export_csv(project) == CODEBOOK
    assert CodebookEntry.objects.count() == 4


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("U9,Manager,x,y,z,quote,A.1,i", "line 2, 'Type': 'Manager' is neither"),
        ("U9,User,x,y,z,,A.1,i", "line 2, 'Thematic Quote': empty quote"),
        ("U9,User,x,y,z,q,A.1; Z.9,i", "line 2, 'Linked Taxonomy Node(s)': no node 'Z.9'"),
        ("U9,User,x,y,z", "line 2: expected 8 cells, got 5"),
    ],
)
def test_bad_rows_are_named_and_nothing_is_stored(project, row, message):
    text = CODEBOOK + row + "\n"
    with pytest.raises(CodebookError) as err:
        import_csv(project, text)
    assert message.replace("line 2", "line 6") in str(err.value)
    assert not CodebookEntry.objects.exists()
    assert not Participant.objects.exists()


def test_a_participant_described_two_ways_is_an_error(project):
    text = HEADER + "\nU1,User,Beginner,a,b,q,,i\nU1,Developer,Beginner,a,b,q,,i\n"
    with pytest.raises(CodebookError, match="line 3, 'Type': participant U1 was described"):
        import_csv(project, text)


def test_missing_column_is_named(project):
    with pytest.raises(CodebookError, match="line 1, 'Research Insight': missing column"):
        import_csv(project, HEADER.rsplit(",", 1)[0] + "\n")


def test_a_chinese_readers_export_is_the_studys_file_and_imports_again(project):
    assert import_csv(project, CODEBOOK) == 4
    with translation.override("zh-hans"):
        exported = export_csv(project)
    assert exported == CODEBOOK  # User / Developer, not the translated labels
    import_csv(project, exported, replace=True)
    assert CodebookEntry.objects.count() == 4
