"""The container files, checked where no image can be built (no Docker
daemon or registry): each Dockerfile parses into known instructions with
well-formed JSON arguments, everything it COPYs exists in the build context
once scripts/package.sh has run (build/packages/ is PACKAGES_DIR here), and
compose.yaml names Dockerfiles that exist.
Usage: docker_files_test.py SOURCE_DIR PACKAGES_DIR"""

import glob
import json
import re
import shlex
import sys
from pathlib import Path

INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK",
                "SHELL", "MAINTAINER"}
JSON_FORMS = {"CMD", "ENTRYPOINT", "RUN", "SHELL", "VOLUME"}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line: comments dropped, lines
    ending in a backslash joined with the next."""
    result, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical, pending = pending + line, ""
        word, _, args = logical.strip().partition(" ")
        result.append((word.upper(), args.strip()))
    if pending:
        raise ValueError("the last line continues into nothing")
    return result


def check_instruction(word: str, args: str) -> None:
    if word not in INSTRUCTIONS:
        raise ValueError(f"unknown instruction {word}")
    if word in JSON_FORMS and args.startswith("["):
        value = json.loads(args)
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"{word} {args}: not a list of strings")


def copy_sources(args: str) -> list[str]:
    words = [w for w in shlex.split(args) if not w.startswith("--")]
    if len(words) < 2:
        raise ValueError(f"COPY {args}: needs sources and a destination")
    return words[:-1]


def context_path(source: str, source_dir: Path, packages_dir: Path) -> str:
    prefix = "build/packages/"
    if source.startswith(prefix):
        return str(packages_dir / source[len(prefix):])
    return str(source_dir / source)


def check_dockerfile(path: Path, source_dir: Path, packages_dir: Path) -> None:
    steps = instructions(path.read_text())
    if not steps or steps[0][0] not in ("FROM", "ARG"):
        raise ValueError("does not start with FROM")
    for word, args in steps:
        check_instruction(word, args)
        if word in ("COPY", "ADD"):
            for source in copy_sources(args):
                found = glob.glob(context_path(source, source_dir, packages_dir))
                if len(found) != 1:
                    raise ValueError(f"COPY {source}: {len(found)} files in the build context "
                                     f"({found}), not one")
                print(f"  {path.name}: COPY {source} -> {found[0]}")


def check_compose(path: Path) -> None:
    named = re.findall(r"^\s*dockerfile:\s*(\S+)", path.read_text(), re.MULTILINE)
    context = (path.parent / "../..").resolve()
    if not named:
        raise ValueError("names no Dockerfile")
    for dockerfile in named:
        if not (context / dockerfile).is_file():
            raise ValueError(f"names {dockerfile}, which does not exist")


def main() -> int:
    source_dir, packages_dir = Path(sys.argv[1]), Path(sys.argv[2])
    docker_dir = source_dir / "packaging/docker"
    failures = 0
    for path in sorted(docker_dir.glob("Dockerfile.*")) + [docker_dir / "compose.yaml"]:
        try:
            if path.name == "compose.yaml":
                check_compose(path)
            else:
                check_dockerfile(path, source_dir, packages_dir)
            print(f"{path.name}: ok")
        except (ValueError, json.JSONDecodeError) as e:
            print(f"{path.name}: {e}", file=sys.stderr)
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
