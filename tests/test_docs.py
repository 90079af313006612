"""Every command the README and docs/ show is run here, in order, page by page, so that the pages
cannot drift from the code; and every relative link between them leads somewhere.

A page runs in a scratch folder that links to the checkout's top-level entries (so
`examples/...` and `bench/...` resolve) and receives the page's `file=` blocks. `tritium serve`
(and `make serve`, which runs it on the example repository) starts in the background on free
ports and stays up, for the commands after it, until the next server or the page's end; the
ports the pages name (8000, 8001, 8002, 9000) are rewritten to those. Every other command must
exit 0, and a `console` block's output lines must appear in what it prints. What cannot run here
is in EXCLUDED, with the reason.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support import ROOT
from support.docs_markdown import (
    LANGUAGES,
    Block,
    Command,
    anchors,
    blocks,
    commands,
    relative_links,
)
from support.server_process import free_ports

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Commands shown but not run, by how they start, and why.
EXCLUDED = {
    "make test": "runs the whole suite, this file included",
    "pip install": "needs the network (PyPI, PyTorch's index); "
                   "test_pip_commands_name_the_extras_pyproject_defines checks the extras",
    "hf download": "downloads a model from the Hugging Face hub",
    "perf_analyzer": "its wheels need glibc 2.38 (manylinux_2_38); the build machine has 2.36",
    "aiperf": "NVIDIA's LLM benchmark client, installed in an environment of its own",
    "genai-perf": "NVIDIA's LLM benchmark client; drives perf_analyzer (above)",
    "guidellm": "the vLLM project's LLM benchmark client, in an environment of its own",
    "lm-eval": "EleutherAI's evaluation harness, in an environment of its own",
    "tools/gpu-wheels.sh": "downloads wheels for the GPU machine",
    "tools/gpu-check.sh": "needs a CUDA GPU",
}
# `make serve` runs this (checked against the Makefile below) after building .venv.
MAKE_SERVE = ("tritium serve --model-repository examples/model_repository "
              "--backend-directory examples/backends")
DOC_PORTS = (8000, 8001, 8002, 9000)


def excluded(command: str) -> str | None:
    return next((why for start, why in EXCLUDED.items() if command.startswith(start)), None)


class Page:
    """One page's run: its scratch folder, its ports, the server in the background."""

    def __init__(self, folder: Path):
        self.folder = folder
        for entry in ROOT.iterdir():
            if entry.name != ".git":
                (folder / entry.name).symlink_to(entry)
        self.ports = dict(zip(DOC_PORTS, free_ports(len(DOC_PORTS)), strict=True))
        self.env = dict(os.environ, PYTHONPATH=str(ROOT / "src"),
                        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        self.server: subprocess.Popen | None = None
        self.log = folder / "server.log"

    def rewrite(self, text: str) -> str:
        return re.sub(r"(?<=[:= ])(8000|8001|8002|9000)\b",
                      lambda m: str(self.ports[int(m.group(1))]), text)

    def write(self, block: Block) -> None:
        target = self.folder / str(block.file)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text)

    def run(self, command: Command) -> None:
        print(f"{command.block.where}: {command.command}", flush=True)
        text = MAKE_SERVE if command.command.startswith("make serve") else command.command
        text = self.rewrite(text)
        if text.startswith("tritium serve"):
            return self.serve(text, command)
        result = subprocess.run(["bash", "-c", text], cwd=self.folder, env=self.env,
                                capture_output=True, text=True, timeout=900, check=False)
        shown = f"{command.block.where}: {command.command}\n{result.stdout}{result.stderr}"
        assert result.returncode == 0, shown
        printed = result.stdout.splitlines()
        for line in command.output:
            assert line in printed, f"{line!r} not printed by\n{shown}"

    def run_program(self, block: Block) -> None:
        print(f"{block.where}: python", flush=True)
        script = self.folder / f"block_{block.line}.py"
        script.write_text(self.rewrite(block.text))
        result = subprocess.run([sys.executable, script.name], cwd=self.folder, env=self.env,
                                capture_output=True, text=True, timeout=900, check=False)
        assert result.returncode == 0, f"{block.where}\n{result.stdout}{result.stderr}"

    def serve(self, text: str, command: Command) -> None:
        self.stop()
        args = shlex.split(text)
        for flag, port in (("--http-port", 8000), ("--grpc-port", 8001),
                           ("--metrics-port", 8002)):
            if flag not in args:
                args += [flag, str(self.ports[port])]
        with self.log.open("w") as log:
            self.server = subprocess.Popen(args, cwd=self.folder, env=self.env, stdout=log,
                                           stderr=subprocess.STDOUT)
        ready = f"http://127.0.0.1:{self.ports[8000]}/v2/health/ready"
        for _ in range(1200):
            assert self.server.poll() is None, \
                f"{command.block.where}: {text} exited\n{self.log.read_text()}"
            try:
                if urllib.request.urlopen(ready, timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"{command.block.where}: {text} not ready\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.server is None:
            return
        self.server.send_signal(signal.SIGINT)
        try:
            self.server.wait(60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()
        self.server = None


# A page starts servers and runs a dozen commands: minutes on a loaded machine.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_pages_commands_run(page: Path, tmp_path: Path) -> None:
    run = Page(tmp_path)
    try:
        for block in blocks(page):
            if block.file:
                run.write(block)
            elif block.language == "python":
                run.run_program(block)
            elif block.language in ("sh", "console"):
                for command in commands(block):
                    if not excluded(command.command):
                        run.run(command)
    finally:
        run.stop()


def test_every_block_says_what_it_is() -> None:
    """An unlabeled fence could hide a command the test above never runs."""
    unlabeled = [f"{b.where} ```{b.language}" for page in PAGES for b in blocks(page)
                 if b.language not in LANGUAGES]
    assert not unlabeled, f"fences need one of {sorted(LANGUAGES)}: {unlabeled}"


def test_each_exclusion_still_matches_a_command() -> None:
    shown = [c.command for page in PAGES for b in blocks(page) for c in commands(b)
             if b.language in ("sh", "console")]
    stale = [start for start in EXCLUDED if not any(c.startswith(start) for c in shown)]
    assert not stale, f"EXCLUDED lists commands no page shows any more: {stale}"


def test_make_serve_runs_what_the_pages_say_it_runs() -> None:
    result = subprocess.run(["make", "-n", "-o", ".venv/.installed", "serve"], cwd=ROOT,
                            capture_output=True, check=True, text=True, timeout=60)
    recipe = " ".join(result.stdout.replace("\\\n", " ").split())
    assert MAKE_SERVE in recipe, recipe
    assert "pip install" not in recipe  # the example needs Tritium alone


def test_pip_commands_name_the_extras_pyproject_defines() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    section = pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = set(re.findall(r"^(\w+) = \[", section, re.MULTILINE))
    named = {extra for page in PAGES for b in blocks(page) for c in commands(b)
             if c.command.startswith("pip install")
             for group in re.findall(r"\.\[([\w,]+)\]", c.command) for extra in group.split(",")}
    assert named and named <= extras, named - extras


def test_relative_links_lead_to_files_and_headings() -> None:
    broken = []
    for page in PAGES:
        for target in relative_links(page):
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_the_readme_is_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300
