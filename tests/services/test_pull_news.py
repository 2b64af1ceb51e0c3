"""Which periodic pulls are news (``pull_news.unheard``): a pull bringing only a newer copy
of a file already told, with the same verdict and problems, is not told again until the
earlier copies kept reach the next power of two; anything else new is told."""

from __future__ import annotations

from rgt_tui.services.watch.drivers.pull_news import PullNews, copies_step, unheard

TOLD = PullNews(0, "VERIFIED", (), copies=2)


def test_a_rewritten_checkpoint_is_told_at_1_2_4_8_copies():
    assert [copies_step(n) for n in (0, 1, 2, 3, 4, 7, 8)] == [-1, 0, 1, 1, 2, 2, 3]
    told, notices = None, []
    for copies in range(1, 17):
        news = PullNews(0, "VERIFIED", (), copies)
        if unheard(news, told) is None:
            told = news
            notices.append(copies)
    assert notices == [1, 2, 4, 8, 16]


def test_a_new_file_a_new_verdict_or_a_new_problem_is_told_at_once():
    assert unheard(PullNews(1, "VERIFIED", (), 3), TOLD) is None
    assert unheard(PullNews(0, "NOT VERIFIED: 1 problem", ("x",), 3), TOLD) is None
    assert unheard(PullNews(0, "VERIFIED", ("a secret skipped",), 3), TOLD) is None


def test_a_standing_problem_is_not_told_again_and_the_line_says_when_it_will_be():
    problems = ("secret.key: refused by name",)
    told = PullNews(0, "NOT VERIFIED: 1 problem", problems, copies=2)
    why = unheard(PullNews(0, "NOT VERIFIED: 1 problem", problems, copies=3), told)
    assert why is not None and "notified again at 4 earlier copies" in why
