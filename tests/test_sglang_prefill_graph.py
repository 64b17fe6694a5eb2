"""How ServerArgs settles the prefill cuda-graph backend, read as data (prefill_graph_rules):
per-model default hooks, the compatibility switch and each backend's disable rules."""

from __future__ import annotations

from apron.extractors.sglang.prefill_graph import prefill_graph_rules

PATH = "python/sglang/srt/server_args.py"
SERVER_ARGS = """
class ServerArgs:
    def _apply_inkling_prefill_cuda_graph_default(self):
        if self.cuda_graph_backend_prefill is not None:
            return
        arch = self.get_model_config().hf_config.architectures[0]
        if arch in ("InklingForConditionalGeneration",):
            self.cuda_graph_backend_prefill = Backend.FULL

    def _apply_cuda_graph_compatibility(self):
        if (Phase.PREFILL, "backend") in self._cuda_graph_config_locked:
            return
        if (
            self.cuda_graph_config.prefill.backend == Backend.BREAKABLE
            and self.get_model_config().is_multimodal_piecewise_cuda_graph_supported
        ):
            self.cuda_graph_config.prefill.backend = Backend.TC_PIECEWISE
        if self.cuda_graph_config.prefill.backend == Backend.TC_PIECEWISE:
            self._disable_tc_piecewise_cudagraph_if_incompatible()

    def _disable_tc_piecewise_cudagraph_if_incompatible(self):
        rules = [("pipeline parallelism", lambda: self.pp_size > 1)]
        for _name, predicate in rules:
            if predicate():
                self.cuda_graph_config.prefill.backend = Backend.DISABLED

    def _disable_breakable_cudagraph_if_incompatible(self):
        rules = [
            ("NemotronH", lambda: is_nemotron_h(self.get_model_config().hf_config)),
            ("two-batch overlap", lambda: self.enable_two_batch_overlap),
        ]
        for name, predicate in rules:
            if predicate():
                self.cuda_graph_config.prefill.backend = Backend.DISABLED
                return

    def _disable_full_prefill_cudagraph_if_incompatible(self):
        rules = []
"""


def _rows(text: str = SERVER_ARGS):
    return [
        (r.backend, r.kind, r.order, r.name, r.condition, r.target)
        for r in prefill_graph_rules(text, PATH)
    ]


def _rules(text: str = SERVER_ARGS):
    return [r.rule for r in prefill_graph_rules(text, PATH)]


def test_defaults_switch_and_rules_are_read():
    assert _rows() == [
        ("", "default", 0, "InklingForConditionalGeneration", "", "full"),
        (
            "breakable",
            "switch",
            0,
            "",
            "self.get_model_config().is_multimodal_piecewise_cuda_graph_supported",
            "tc_piecewise",
        ),
        (
            "breakable",
            "disable",
            0,
            "NemotronH",
            "is_nemotron_h(self.get_model_config().hf_config)",
            "",
        ),
        ("breakable", "disable", 1, "two-batch overlap", "self.enable_two_batch_overlap", ""),
        ("tc_piecewise", "disable", 0, "pipeline parallelism", "self.pp_size > 1", ""),
    ]


def test_each_condition_is_an_expression_of_the_rule_language():
    """What apron evaluates: names spelled as SGLang's code, a set predicate as a call."""
    assert _rules() == [
        (),
        "self.get_model_config().is_multimodal_piecewise_cuda_graph_supported",
        ("call", "is_nemotron_h", "self.get_model_config().hf_config"),
        "self.enable_two_batch_overlap",
        (">", "self.pp_size", 1),
    ]


def test_an_unreadable_condition_is_undefined_in_place():
    text = SERVER_ARGS.replace("lambda: self.pp_size > 1", "lambda: self.pp_size[1:] > 1")
    assert _rules(text)[-1] == ("undef", "self.pp_size[1:] > 1")


def test_reformatting_changes_nothing():
    text = SERVER_ARGS.replace(
        '("two-batch overlap", lambda: self.enable_two_batch_overlap),',
        "(\n                'two-batch overlap',  # TBO\n"
        "                lambda: (self.enable_two_batch_overlap),\n            ),",
    )
    assert _rows(text) == _rows()
    assert _rules(text) == _rules()


def test_a_rule_of_another_shape_is_unread_not_dropped():
    text = SERVER_ARGS.replace(
        '("two-batch overlap", lambda: self.enable_two_batch_overlap),', "make_rule(self),"
    )
    assert ("breakable", "unread", 1, "", "make_rule(self)", "") in _rows(text)


def test_a_missing_rule_method_is_unread():
    text = SERVER_ARGS.replace("_disable_breakable_cudagraph_if_incompatible", "_gone")
    assert any(r[:2] == ("breakable", "unread") for r in _rows(text))
