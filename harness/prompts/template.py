"""A judge prompt: system text, a user template, few-shot examples and a version.

Prompts are data (``conf/prompt/*.yaml``). A request is laid out shared part first: the
instructions and examples (the same for every request of a run), then what a sample's
requests share (question, answer), the chunk last, so a provider's prefix cache (OpenAI's
cached input tokens from 1,024 shared tokens, vLLM's and llama.cpp's prefix caching) serves
everything before the chunk. Values are inserted once and never re-rendered, so a chunk
that contains template syntax (``{{ }}``) or instructions is treated as text.

Templates are rendered in Jinja2's immutable sandbox: a template can read its variables
but not reach Python internals (``__class__``, ``__globals__``, ...) or change a value. A
template that tries is refused at start-up with one line naming the prompt and the
expression; nothing of it runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from harness.core.errors import ConfigError, closest
from harness.core.text import text_problem
from harness.core.types import Kind
from harness.prompts import sandbox

Mode = Literal["pointwise", "listwise"]

#: The variables each kind of call provides to its template.
VARIABLES: dict[str, frozenset[str]] = {
    "pointwise": frozenset({"question", "answer", "context"}),
    "listwise": frozenset({"question", "answer", "contexts"}),
    "reason": frozenset({"question", "answer", "verdicts", "score"}),
}


class PromptTemplate:
    """A versioned judge prompt.

    Args:
        version: A name that changes whenever the wording changes (logged with the run).
        mode: ``pointwise`` (one chunk per call) or ``listwise`` (all chunks in one call).
        system: The instructions (a Jinja2 template without variables, usually).
        user: The user-message template. Pointwise variables: ``question``, ``answer``,
            ``context``; listwise: ``question``, ``answer``, ``contexts`` (a list).
        examples: Few-shot examples, each ``{inputs: {...variables}, output: {...}}``;
            rendered as user/assistant turns before the real question.
        reason: For listwise prompts that explain their score (deepeval's
            ``include_reason``): ``{system, user}`` with variables ``question``,
            ``answer``, ``verdicts`` and ``score``.
        reasons: ``false``: the judge replies with verdicts only, no reason per verdict (a
            reply schema without ``reason``): far fewer output tokens, the same score.
        path: The file the prompt came from, if any (recorded, not read; named in errors).
    """

    def __init__(
        self,
        version: str,
        mode: Mode,
        system: str,
        user: str,
        examples: Sequence[Mapping[str, Any]] = (),
        reason: Mapping[str, str] | None = None,
        reasons: bool = True,
        path: str | None = None,
    ) -> None:
        if mode not in ("pointwise", "listwise"):
            raise ConfigError(f"prompt.mode: expected 'pointwise' or 'listwise', got {mode!r}")
        if not isinstance(reasons, bool):
            raise ConfigError(f"prompt.reasons: expected true or false, got {reasons!r}")
        self.version, self.mode, self.system, self.user = version, mode, system, user
        self.reasons = reasons
        self.examples = [dict(e) for e in examples]
        self.reason = dict(reason) if reason else None
        self.path = path
        env = sandbox.environment()
        try:
            self._system = env.from_string(system)
            self._user = env.from_string(user)
            self._reason = (
                None
                if self.reason is None
                else (env.from_string(self.reason["system"]), env.from_string(self.reason["user"]))
            )
        except KeyError as e:
            raise ConfigError(
                f"prompt.reason: missing key {e}; it needs 'system' and 'user'"
            ) from None
        except Exception as e:  # jinja2.TemplateSyntaxError
            raise ConfigError(f"prompt {version}: template syntax error: {e}") from None
        self._check()

    @classmethod
    def from_file(cls, path: str) -> PromptTemplate:
        """Load a prompt from a YAML file with the same keys as the constructor."""
        return PromptFile(path)

    @property
    def _name(self) -> str:
        """The prompt in messages: its file, else its version."""
        return self.path or self.version

    def _check(self) -> None:
        """Fail at start-up on unsafe expressions and on variables the template uses but
        no call provides."""
        from jinja2 import meta

        env = sandbox.environment()
        checks = [("system", self.system, frozenset()), ("user", self.user, VARIABLES[self.mode])]
        if self.reason is not None:
            checks += [
                ("reason.system", self.reason["system"], VARIABLES["reason"]),
                ("reason.user", self.reason["user"], VARIABLES["reason"]),
            ]
        for where, text, _ in checks:
            if (problem := text_problem(text)) is not None:  # as dataset text is checked
                raise ConfigError(f"prompt {self._name} ({where}): the text {problem}")
            sandbox.refuse_internals(f"prompt {self._name} ({where})", text, env.parse(text))
        self._dry_run()
        for where, text, allowed in checks:
            for name in sorted(meta.find_undeclared_variables(env.parse(text)) - allowed):
                raise ConfigError(
                    f"prompt {self.version} ({where}): unknown variable '{name}'"
                    f"{closest(name, sorted(allowed))}; {self.mode} templates can use "
                    f"{', '.join(sorted(allowed)) or 'no variables'}"
                )
        for i, example in enumerate(self.examples):
            if set(example) != {"inputs", "output"}:
                raise ConfigError(
                    f"prompt {self.version}: examples[{i}] needs exactly 'inputs' and 'output'"
                )
            try:
                self._user.render(**example["inputs"])
            except Exception as e:
                raise ConfigError(f"prompt {self.version}: examples[{i}]: {e}") from None

    def _dry_run(self) -> None:
        """Render each template once with stand-in values: the sandbox refuses, here
        rather than mid-run, what the static check cannot see (a computed attribute name).
        Other errors depend on the real values and are left to the real call."""
        from jinja2.exceptions import SecurityError

        stand_in: dict[str, Any] = {
            "question": "q", "answer": "a", "context": "c", "contexts": ["c"],
            "verdicts": [{"verdict": "yes", "reason": "r"}], "score": 0.5,
        }
        templates = [("system", self._system), ("user", self._user)]
        if self._reason is not None:
            templates += [("reason.system", self._reason[0]), ("reason.user", self._reason[1])]
        for where, template in templates:
            try:
                template.render(**stand_in)
            except SecurityError as e:
                raise ConfigError(f"prompt {self._name} ({where}): {sandbox.refusal(e)}") from None
            except Exception:  # the real values may well fit
                continue

    def _render(self, where: str, template: Any, variables: Mapping[str, Any]) -> str:
        from jinja2.exceptions import SecurityError

        try:
            return str(template.render(**variables)).strip()
        except SecurityError as e:
            raise ConfigError(f"prompt {self._name} ({where}): {sandbox.refusal(e)}") from None

    @cached_property
    def sha256(self) -> str:
        """Hash of everything that shapes the judge's input (a run tag, a cache key part)."""
        shape: list[Any] = [self.version, self.mode, self.system, self.user, self.examples,
                            self.reason]
        if not self.reasons:  # a prompt that asks for reasons hashes as before the option
            shape.append({"reasons": False})
        text = json.dumps(
            shape,
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(text.encode()).hexdigest()

    @cached_property
    def _prefix(self) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": self._render("system", self._system, {})}]
        for example in self.examples:
            user = self._render("user", self._user, example["inputs"])
            messages.append({"role": "user", "content": user})
            messages.append(
                {"role": "assistant", "content": json.dumps(example["output"], ensure_ascii=False)}
            )
        return messages

    @property
    def kind(self) -> Kind:
        """What a verdict call asks of the judge (selects the reply schema): ``pointwise`` or
        ``listwise``, ``_bare`` when the reply holds verdicts only."""
        if self.mode == "pointwise":
            return "pointwise" if self.reasons else "pointwise_bare"
        return "listwise" if self.reasons else "listwise_bare"

    def messages(self, **variables: Any) -> list[dict[str, str]]:
        """Chat messages for one judge call: system, examples, then the rendered user turn."""
        user = self._render("user", self._user, variables)
        return [*self._prefix, {"role": "user", "content": user}]

    def reason_messages(self, **variables: Any) -> list[dict[str, str]]:
        """Chat messages for the summary-reason call of a listwise metric."""
        if self._reason is None:
            raise ConfigError(f"prompt {self.version} has no 'reason' templates")
        system, user = self._reason
        return [
            {"role": "system", "content": self._render("reason.system", system, variables)},
            {"role": "user", "content": self._render("reason.user", user, variables)},
        ]

    def describe(self) -> dict[str, Any]:
        """What identifies the prompt in outputs."""
        return {
            "version": self.version, "mode": self.mode, "sha256": self.sha256, "path": self.path
        }

    def to_yaml(self) -> str:
        """The prompt as YAML (logged as an artifact)."""
        import yaml

        data: dict[str, Any] = {
            "version": self.version,
            "mode": self.mode,
            "system": self.system,
            "user": self.user,
            "examples": self.examples,
        }
        if self.reason is not None:
            data["reason"] = self.reason
        if not self.reasons:
            data["reasons"] = False
        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


class PromptFile(PromptTemplate):
    """A prompt read from a YAML file (``prompt=file prompt.path=F``).

    Args:
        path: The file; its keys are ``PromptTemplate``'s (``version``, ``mode``,
            ``system``, ``user``, ``examples``, ``reason``, ``reasons``).
    """

    def __init__(self, path: str) -> None:
        import yaml

        file = Path(path).expanduser()
        if not file.is_file():
            raise ConfigError(f"prompt.path: {file}: file not found")
        try:
            data = yaml.safe_load(file.read_text("utf-8"))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{file}:{mark.line + 1}" if mark is not None else str(file)
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise ConfigError(f"prompt.path: {where}: not valid YAML ({problem})") from None
        except (OSError, UnicodeError) as e:
            raise ConfigError(f"prompt.path: {file}: cannot read it ({e})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"prompt.path: {file}: expected a mapping of prompt keys")
        data.pop("_target_", None)
        data.pop("path", None)
        from harness.core.validation import check_arguments

        check_arguments("prompt", PromptTemplate, data)
        super().__init__(**data, path=str(file))
