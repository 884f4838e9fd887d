"""SiddhiQL parser: `parse(text) -> App`.

Accepts Siddhi 3/4/5 syntax and the Siddhi 2.x forms of WSO2 CEP 3.1 plans
(`insert into S for expired-events`, `define partition P by S.a` + `partition by P`).
"""

from __future__ import annotations

from engine.compiler.parse_queries import QueryParser
from engine.compiler.tokens import tokenize
from engine.query.definitions import Annotation
from engine.query.queries import App, Partition, PartitionDefinition, Query


class Parser(QueryParser):
    def app(self) -> App:
        app = App()
        expect_separator = False
        while not self.at_eof():
            if self.accept_punct(";"):
                expect_separator = False
                continue
            start = self.tok
            if expect_separator:
                self.fail("expected ';' between definitions and queries")
            annotations = self._leading_annotations(app)
            if self.at_eof() or self.at_punct(";"):
                if annotations:
                    raise self.error(
                        "an annotation must be followed by a definition or a query", annotations[-1].span
                    )
                continue
            if self.at_word("define"):
                app.definitions.append(self.definition(annotations, start))
            elif self.at_word("from"):
                app.elements.append(self.query(annotations, start))
            elif self.at_word("partition"):
                app.elements.append(self.partition(annotations, start))
                expect_separator = False
                continue
            else:
                self.fail("expected 'define', 'from', 'partition' or an annotation")
            expect_separator = True
        _attach_legacy_partitions(app)
        app.legacy = self.legacy or any(a.key.startswith("plan:") for a in app.annotations)
        return app

    def _leading_annotations(self, app: App) -> list[Annotation]:
        """App-level annotations (`@App:`/`@Plan:`) go to the app; the rest to the element."""
        own: list[Annotation] = []
        while self.at_punct("@"):
            ann = self.annotation()
            if ann.key.startswith(("app:", "plan:")):
                app.annotations.append(ann)
            else:
                own.append(ann)
        return own


def _attach_legacy_partitions(app: App) -> None:
    """Wrap each `... partition by P` query into a partition built from `define partition P`."""
    defs = {d.name: d for d in app.definitions if isinstance(d, PartitionDefinition)}
    for i, element in enumerate(app.elements):
        if isinstance(element, Query) and element.partition_ref is not None:
            pdef = defs.get(element.partition_ref)
            if pdef is None:
                continue  # reported by the checker as an unknown partition
            app.elements[i] = Partition(list(pdef.partition_with), [element], span=element.span)


def parse(source: str) -> App:
    """Parse a SiddhiQL plan; raises QuerySyntaxError with the position of the mistake."""
    return Parser(tokenize(source), source).app()
