//! A tiny WHERE-clause builder for the store's filtered queries, so every
//! filter binds its values as parameters instead of formatting them in.

use rusqlite::types::Value as SqlValue;

#[derive(Default)]
pub(crate) struct Conditions {
    clauses: Vec<String>,
    args: Vec<SqlValue>,
}

impl Conditions {
    fn bind(&mut self, v: SqlValue) -> String {
        self.args.push(v);
        format!("?{}", self.args.len())
    }

    /// Adds `column OP value` when `value` is given.
    pub(crate) fn cmp(
        &mut self,
        column: &str,
        op: &str,
        value: Option<impl Into<SqlValue>>,
    ) -> &mut Self {
        if let Some(v) = value {
            let p = self.bind(v.into());
            self.clauses.push(format!("{column} {op} {p}"));
        }
        self
    }

    /// Adds `column IN (…)` when `values` is non-empty.
    pub(crate) fn any_of(&mut self, column: &str, values: &[String]) -> &mut Self {
        if !values.is_empty() {
            let ps: Vec<String> = values
                .iter()
                .map(|v| self.bind(SqlValue::Text(v.clone())))
                .collect();
            self.clauses
                .push(format!("{column} IN ({})", ps.join(", ")));
        }
        self
    }

    /// Adds a LIKE match on any of `columns` for the substring `text`.
    pub(crate) fn contains(&mut self, columns: &[&str], text: Option<&str>) -> &mut Self {
        if let Some(t) = text {
            let escaped = t
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            let p = self.bind(SqlValue::Text(format!("%{escaped}%")));
            let ors: Vec<String> = columns
                .iter()
                .map(|c| format!("{c} LIKE {p} ESCAPE '\\'"))
                .collect();
            self.clauses.push(format!("({})", ors.join(" OR ")));
        }
        self
    }

    /// Adds a fixed clause, written as a partial index's WHERE is (SQLite
    /// uses such an index only when the query states that clause itself).
    pub(crate) fn fixed(&mut self, clause: &'static str) -> &mut Self {
        self.clauses.push(clause.to_string());
        self
    }

    /// ` WHERE …` (or nothing) and the bound values.
    pub(crate) fn finish(self) -> (String, Vec<SqlValue>) {
        let sql = if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        };
        (sql, self.args)
    }
}
