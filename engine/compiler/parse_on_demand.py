"""On-demand queries (Siddhi's `store_query` rule):

```
from T [as a] [on cond] [within t1[, t2] per p] [select ...]
select ... insert into T
select ... update or insert into T [set T.c = e, ...] on cond
[select ...] delete T [on cond]
[select ...] update T [set T.c = e, ...] on cond
```
each optionally ended by `;`.
"""

from __future__ import annotations

from engine.compiler.parse_queries import QueryParser
from engine.compiler.stream import span_of
from engine.compiler.tokens import tokenize
from engine.query.queries import DeleteFrom, InsertInto, OnDemandQuery, UpdateOrInsert, UpdateTable


class OnDemandParser(QueryParser):
    def on_demand_query(self) -> OnDemandQuery:
        start = self.tok
        if self.at_word("from"):
            q = self._find()
        else:
            q = self._change()
        self.accept_punct(";")
        if not self.at_eof():
            self.fail("expected the end of the on-demand query")
        q.span = self.span_from(start)
        return q

    def _find(self) -> OnDemandQuery:
        self.expect_word("from")
        name_tok = self.tok
        q = OnDemandQuery(self.name("a table or window name after 'from'"), source_span=span_of(name_tok))
        if self.accept_word("as"):
            q.alias = self.name("an alias after 'as'")
        if self.accept_word("on"):
            q.on = self.expression()
        if self.accept_word("within"):
            q.within = self.expression()
            if self.accept_punct(","):
                q.within_end = self.expression()
            self.expect_word("per", " after 'within'")
            q.per = self.expression()
        if self.at_word("select"):
            q.selector = self.selector()
        return q

    def _change(self) -> OnDemandQuery:
        selector = self.selector() if self.at_word("select") else None
        start = self.tok
        out: InsertInto | DeleteFrom | UpdateTable | UpdateOrInsert
        if self.accept_word("insert"):
            self.expect_word("into")
            target_tok = self.tok
            target = self.name("a table name after 'insert into'")
            out = InsertInto(target=target, target_span=span_of(target_tok))
        elif self.accept_word("delete"):
            target_tok = self.tok
            target = self.name("a table name after 'delete'")
            on = self.expression() if self.accept_word("on") else None
            out = DeleteFrom(target=target, on=on, target_span=span_of(target_tok))
        elif self.accept_word("update"):
            upsert = self.accept_word("or") is not None
            if upsert:
                self.expect_word("insert")
                self.expect_word("into")
            target_tok = self.tok
            target = self.name("a table name")
            assignments = self._set_clause()
            self.expect_word(
                "on", f" ('{'update or insert into' if upsert else 'update'}' needs an 'on' condition)"
            )
            cls = UpdateOrInsert if upsert else UpdateTable
            out = cls(target=target, on=self.expression(), set=assignments, target_span=span_of(target_tok))
        elif selector is None:
            self.fail("expected 'from', 'select', 'delete' or 'update' to start an on-demand query")
        else:
            self.fail(
                "expected 'insert into', 'delete', 'update' or 'update or insert into' after the select"
            )
        out.span = self.span_from(start)
        if selector is None and isinstance(out, (InsertInto, UpdateOrInsert)):
            what = "insert into" if isinstance(out, InsertInto) else "update or insert into"
            raise self.error(f"'{what}' needs a select clause giving the row", out.span)
        return OnDemandQuery(selector=selector, output=out)


def parse_on_demand(text: str) -> OnDemandQuery:
    """Parse one on-demand query; raises QuerySyntaxError with the position of the mistake."""
    return OnDemandParser(tokenize(text), text).on_demand_query()
