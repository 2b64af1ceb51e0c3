"""China routes (generic-ssh §3, principle 7): which pip index, Hugging Face endpoint and
GitHub address a host's runs use, what every cell gets exported (``PIP_INDEX_URL``,
``HF_ENDPOINT``), and preflight's ``route`` check from what the box measured over them.

A host is on the China route when its profile says so (the China family, AutoDL:
``china_mirrors = true`` in the profile) or its own ``china_mirrors = true``; then the
mirrors default to the profile's (Tsinghua's PyPI mirror, hf-mirror.com). A host's own
``pip_index_url`` / ``hf_endpoint`` wins and is exported whether or not it is on the
China route. The measuring happens on the box, in the run's interpreter
(``preflight_check.py``'s ``route_facts``: proxies in its environment apply, as they do
to pip and huggingface_hub), so it is the route the run will use. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rgt_tui.domain.config import Readiness
from rgt_tui.domain.preflight import Check, clip
from rgt_tui.domain.profiles import Profile

OFFICIAL_PIP = "https://pypi.org/simple"
OFFICIAL_HF = "https://huggingface.co"
OFFICIAL_GITHUB = "https://github.com"
# The mirrors a host with china_mirrors = true gets when its profile names none.
MIRROR_PIP = "https://pypi.tuna.tsinghua.edu.cn/simple"
MIRROR_HF = "https://hf-mirror.com"
OTHER_PIP_MIRROR = "https://mirrors.aliyun.com/pypi/simple"

# The floor (docs/ready.md, "China routes"): a route is slow when it gives no answer in
# ROUTE_TIMEOUT_S, its first byte comes after FIRST_BYTE_FLOOR_S, or a fetch of at least
# RATE_MIN_BYTES runs under RATE_FLOOR_BPS (a smaller object says nothing about rate).
ROUTE_TIMEOUT_S = 10.0
FIRST_BYTE_FLOOR_S = 3.0
RATE_FLOOR_BPS = 1_000_000
RATE_MIN_BYTES = 256 * 1024
ROUTE_MAX_BYTES = 1 << 20  # each fetch reads at most this much


@dataclass(frozen=True)
class Routes:
    """A host's routes: ``china`` (measured by preflight), the pip index and Hugging Face
    endpoint its cells use (None: not set, nothing exported) and the GitHub address."""

    china: bool
    pip_index_url: str | None
    hf_endpoint: str | None
    github_url: str

    def cell_env(self) -> tuple[tuple[str, str], ...]:
        """What every cell (and the smoke) gets exported for these routes."""
        env = []
        if self.pip_index_url:
            env.append(("PIP_INDEX_URL", self.pip_index_url))
        if self.hf_endpoint:
            env.append(("HF_ENDPOINT", self.hf_endpoint))
        return tuple(env)

    def targets(self) -> tuple[tuple[str, str, str], ...]:
        """What preflight fetches: (label, the route's base, the small object's URL): the
        pip index's page for pip itself, a ~1 MB file of gpt2 (served by the endpoint, not
        a CDN), GitHub's front page."""
        pip = self.pip_index_url or OFFICIAL_PIP
        hf = self.hf_endpoint or OFFICIAL_HF
        return (
            ("pip", pip, pip + "/pip/"),
            ("hf", hf, hf + "/gpt2/resolve/main/vocab.json"),
            ("github", self.github_url, self.github_url + "/"),
        )


def host_routes(ready: Readiness, profile: Profile) -> Routes:
    """The routes of a host with readiness ``ready`` on ``profile``."""
    china = ready.china_mirrors if ready.china_mirrors is not None else profile.china_mirrors
    pip, hf = ready.pip_index_url, ready.hf_endpoint
    if china:
        pip = pip or profile.pip_index_url or MIRROR_PIP
        hf = hf or profile.hf_endpoint or MIRROR_HF
    return Routes(bool(china), pip, hf, ready.github_url or OFFICIAL_GITHUB)


LABELS = {"pip": "the pip index", "hf": "Hugging Face", "github": "GitHub"}


def _mirror_fix(label: str, base: str) -> str:
    """The mirror to use instead of a slow ``base`` of route ``label``."""
    if label == "pip":
        other = MIRROR_PIP if base.rstrip("/") != MIRROR_PIP else OTHER_PIP_MIRROR
        return f'pip_index_url = "{other}" (exported to every cell as PIP_INDEX_URL)'
    if label == "hf":
        other = MIRROR_HF if base.rstrip("/") != MIRROR_HF else OFFICIAL_HF
        return f'hf_endpoint = "{other}" (exported to every cell as HF_ENDPOINT)'
    return (
        "no standard GitHub mirror: clone on this machine and send it with rgt-tui sync "
        "(the code key), or use the platform's academic proxy (AutoDL: source "
        "/etc/network_turbo in the run template)"
    )


def _verdict(item: dict[str, Any]) -> tuple[bool, str]:
    """(fast enough, what was measured) for one fetch the box reported."""
    error = item.get("error")
    ttfb = item.get("ttfb")
    got = item.get("bytes")
    total = item.get("seconds")
    status = item.get("status")
    if not isinstance(got, int) or isinstance(got, bool):
        got = 0
    if error or not isinstance(ttfb, (int, float)):
        return False, f"no answer in {ROUTE_TIMEOUT_S:g} s ({clip(error or 'no first byte', 120)})"
    if isinstance(status, int) and status >= 400:
        return False, f"HTTP {status}"
    size = f"{got / 1024:.0f} KiB"
    rate = got / total if isinstance(total, (int, float)) and total > 0 else None
    shown = f"first byte {ttfb:.2f} s, {size}" + (
        f" at {rate / 1e6:.2f} MB/s" if rate is not None else ""
    )
    if item.get("cut"):
        return False, f"{shown}: not done in {ROUTE_TIMEOUT_S:g} s"
    if ttfb > FIRST_BYTE_FLOOR_S:
        return False, f"{shown}: first byte slower than {FIRST_BYTE_FLOOR_S:g} s"
    if rate is not None and got >= RATE_MIN_BYTES and rate < RATE_FLOOR_BPS:
        return False, f"{shown}: under {RATE_FLOOR_BPS / 1e6:g} MB/s"
    return True, shown


def check_route(measured: dict[str, Any] | None, routes: Routes) -> Check:
    """``route``: each of the host's routes fast enough from the box, else the slow ones
    named with the mirror to use."""
    items = measured.get("routes") if isinstance(measured, dict) else None
    if not isinstance(items, list):
        why = (measured or {}).get("error") if isinstance(measured, dict) else None
        return Check(
            "route",
            False,
            "the box did not measure its routes"
            + (f": {clip(why, 160)}" if why else " (the run's python did not answer)"),
            "fix python first (see python)",
        )
    by_label = {i.get("label"): i for i in items if isinstance(i, dict)}
    seen, slow, fixes = [], [], []
    for label, base, _url in routes.targets():
        item = by_label.get(label)
        ok, said = _verdict(item) if item is not None else (False, "not measured")
        line = f"{LABELS[label]} {clip(base, 80)}: {said}"
        seen.append(line)
        if not ok:
            slow.append(line)
            fixes.append(_mirror_fix(label, base))
    if slow:
        return Check(
            "route",
            False,
            f"slow from the box (floor: {RATE_FLOOR_BPS / 1e6:g} MB/s, first byte within "
            f"{FIRST_BYTE_FLOOR_S:g} s, an answer within {ROUTE_TIMEOUT_S:g} s): "
            + "; ".join(slow),
            "; ".join(fixes),
        )
    return Check("route", True, "; ".join(seen))
