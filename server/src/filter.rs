//! Statements built from optional parts, with the one placeholder syntax (`$1, $2, …`)
//! that both SQLite and Postgres accept.

/// A value bound to a dynamically built statement.
pub enum Bind {
    Text(String),
    Int(i64),
}

/// A statement built from optional filters. Conditions are written with `?` and
/// numbered as they are added.
pub struct Filter {
    pub sql: String,
    pub binds: Vec<Bind>,
}

impl Filter {
    pub fn new(base: String) -> Self {
        Filter { sql: base, binds: Vec::new() }
    }

    /// Appends ` AND cond`, where each `?` in `cond` takes the next of `binds`.
    pub fn and(&mut self, cond: &str, binds: impl IntoIterator<Item = Bind>) {
        self.sql.push_str(" AND ");
        self.push(cond, binds);
    }

    /// Appends `part`, where each `?` takes the next of `binds`.
    pub fn push(&mut self, part: &str, binds: impl IntoIterator<Item = Bind>) {
        let mut binds = binds.into_iter();
        for piece in part.split_inclusive('?') {
            match piece.strip_suffix('?') {
                Some(text) => {
                    self.binds.push(binds.next().expect("a bind per placeholder"));
                    self.sql.push_str(&format!("{text}${}", self.binds.len()));
                }
                None => self.sql.push_str(piece),
            }
        }
    }

    /// Appends ` VALUES (…), (…)`: a tuple of placeholders for each row of binds.
    pub fn values(&mut self, rows: impl IntoIterator<Item = Vec<Bind>>) {
        self.sql.push_str(" VALUES ");
        for (k, row) in rows.into_iter().enumerate() {
            if k > 0 {
                self.sql.push_str(", ");
            }
            self.push(&format!("({})", placeholders(row.len())), row);
        }
    }

    pub async fn fetch(self, conn: &mut sqlx::AnyConnection) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
        self.query().fetch_all(conn).await
    }

    pub async fn execute(self, conn: &mut sqlx::AnyConnection) -> Result<(), sqlx::Error> {
        self.query().execute(conn).await.map(drop)
    }

    fn query(self) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments> {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(self.sql));
        for b in self.binds {
            query = match b {
                Bind::Text(s) => query.bind(s),
                Bind::Int(i) => query.bind(i),
            };
        }
        query
    }
}

pub fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}
