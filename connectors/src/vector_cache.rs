//! Each user's episode vectors in memory, quantised to 8 bits, for the users the store searches
//! exactly.
//!
//! An exact search through Lance reads the user's whole vector column (1.5 KB a row at 384
//! dimensions: 15 MB for a user with 10,000 episodes) on every query, and that read is most of
//! its time. Here each row costs its dimension in bytes plus 20, the scan is a loop of integer
//! multiply-adds, and only the few best candidates are read from Lance (with their full vectors,
//! so the scores the store returns are exact cosines, as before).
//!
//! Entries belong to one dataset version. The store moves the cache forward with each commit:
//! unchanged when a commit moved no rows (an index build), extended when it appended rows, and
//! emptied when it rewrote fragments (compaction, relayout, erase); entries are then loaded
//! again on demand. A search only uses an entry of the exact version it searches.

use std::collections::HashMap;
use std::sync::Arc;

/// One user's rows: their Lance row ids, event times and quantised vectors.
#[derive(Debug, Clone)]
pub struct UserVectors {
    dim: usize,
    row_ids: Vec<u64>,
    ts_micros: Vec<i64>,
    /// Per row, what turns the integer dot product of the codes into a cosine:
    /// `scale / ‖v‖` (0 for a zero vector, which is then similar to nothing).
    factors: Vec<f32>,
    /// `dim` codes a row: `round(v_i / scale)` with `scale = max |v_i| / 127`.
    codes: Vec<i8>,
}

impl UserVectors {
    pub fn new(dim: usize) -> Self {
        UserVectors {
            dim,
            row_ids: Vec::new(),
            ts_micros: Vec::new(),
            factors: Vec::new(),
            codes: Vec::new(),
        }
    }

    /// Adds a row. `vector` must have the entry's dimension.
    pub fn push(&mut self, row_id: u64, ts_micros: i64, vector: &[f32]) {
        debug_assert_eq!(vector.len(), self.dim);
        self.row_ids.push(row_id);
        self.ts_micros.push(ts_micros);
        self.factors.push(quantise(vector, &mut self.codes));
    }

    /// Room for `rows` more rows, exactly (the budget counts what entries hold).
    pub fn reserve(&mut self, rows: usize) {
        self.row_ids.reserve_exact(rows);
        self.ts_micros.reserve_exact(rows);
        self.factors.reserve_exact(rows);
        self.codes.reserve_exact(rows * self.dim);
    }

    /// Gives back spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.row_ids.shrink_to_fit();
        self.ts_micros.shrink_to_fit();
        self.factors.shrink_to_fit();
        self.codes.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.row_ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.row_ids.is_empty()
    }

    /// Memory the entry holds, in bytes (its vectors' capacity included).
    pub fn bytes(&self) -> usize {
        self.codes.capacity()
            + self.row_ids.capacity() * 8
            + self.ts_micros.capacity() * 8
            + self.factors.capacity() * 4
            + std::mem::size_of::<Self>()
    }

    /// The row ids of the (at most) `n` rows whose quantised cosine to `query` is highest, best
    /// first, among rows with event time at or before `as_of_micros` when given. Ties keep row
    /// order. The quantised cosine is within about 0.01 of the exact one for embedding vectors,
    /// so a caller that needs the exact best `k` asks for a few more and rescores them.
    pub fn nearest(&self, query: &[f32], n: usize, as_of_micros: Option<i64>) -> Vec<u64> {
        if n == 0 || self.is_empty() || query.len() != self.dim {
            return Vec::new();
        }
        let mut query_codes = Vec::with_capacity(self.dim);
        let query_factor = quantise(query, &mut query_codes);
        let mut scored: Vec<(f32, usize)> = self
            .codes
            .chunks_exact(self.dim)
            .enumerate()
            .filter(|(i, _)| as_of_micros.is_none_or(|t| self.ts_micros[*i] <= t))
            .map(|(i, codes)| {
                let dot = dot_i8(&query_codes, codes) as f32;
                (dot * query_factor * self.factors[i], i)
            })
            .collect();
        let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > n {
            scored.select_nth_unstable_by(n - 1, by_score);
            scored.truncate(n);
        }
        scored.sort_unstable_by(by_score);
        scored.into_iter().map(|(_, i)| self.row_ids[i]).collect()
    }
}

/// Appends the 8-bit codes of `v` to `codes`; returns `scale / ‖v‖`, the factor that turns a
/// dot product of codes into a cosine (0 for a zero or non-finite vector).
fn quantise(v: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if max == 0.0 || !max.is_finite() || !norm.is_finite() {
        codes.extend(std::iter::repeat_n(0, v.len()));
        return 0.0;
    }
    let scale = max / 127.0;
    codes.extend(v.iter().map(|x| (x / scale).round() as i8));
    scale / norm
}

/// The dot product of two code vectors (written so that it compiles to wide integer
/// multiply-adds).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| *x as i16 as i32 * *y as i16 as i32)
        .sum()
}

/// The entries of every cached user, for one dataset version, within a memory budget (least
/// recently searched users leave first).
#[derive(Debug)]
pub struct VectorCache {
    budget_bytes: usize,
    /// The dataset version the entries describe; `None` before the first commit is seen.
    version: Option<u64>,
    users: HashMap<(String, String), (Arc<UserVectors>, u64)>,
    bytes: usize,
    tick: u64,
}

impl VectorCache {
    pub fn new(budget_bytes: usize) -> Self {
        VectorCache {
            budget_bytes,
            version: None,
            users: HashMap::new(),
            bytes: 0,
            tick: 0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.budget_bytes > 0
    }

    /// The user's entry if it describes dataset `version`.
    pub fn get(&mut self, version: u64, tenant: &str, user: &str) -> Option<Arc<UserVectors>> {
        if self.version != Some(version) {
            return None;
        }
        self.tick += 1;
        let tick = self.tick;
        // the map is keyed by owned pairs; a lookup by borrowed parts would need another key type
        let (entry, used) = self
            .users
            .get_mut(&(tenant.to_string(), user.to_string()))?;
        *used = tick;
        Some(entry.clone())
    }

    pub fn holds(&self, tenant: &str, user: &str) -> bool {
        self.users
            .contains_key(&(tenant.to_string(), user.to_string()))
    }

    /// Stores an entry loaded from dataset `version` (nothing if the cache has moved on to
    /// another version meanwhile, or the entry alone is over the budget), making room by
    /// dropping the least recently searched users.
    pub fn insert(&mut self, version: u64, tenant: &str, user: &str, mut entry: UserVectors) {
        entry.shrink_to_fit();
        let size = entry.bytes();
        if self.version != Some(version) || size > self.budget_bytes {
            return;
        }
        self.remove(tenant, user);
        while self.bytes + size > self.budget_bytes {
            let Some(oldest) = self
                .users
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.remove(&oldest.0, &oldest.1);
        }
        self.tick += 1;
        self.bytes += size;
        self.users.insert(
            (tenant.to_string(), user.to_string()),
            (Arc::new(entry), self.tick),
        );
    }

    fn remove(&mut self, tenant: &str, user: &str) {
        if let Some((entry, _)) = self.users.remove(&(tenant.to_string(), user.to_string())) {
            self.bytes -= entry.bytes();
        }
    }

    /// Empties the cache; it now describes `version` (whose rows were rewritten).
    pub fn reset(&mut self, version: u64) {
        self.users.clear();
        self.bytes = 0;
        self.version = Some(version);
    }

    /// A commit from `from` to `to` moved no rows: the entries describe `to` as well.
    pub fn carry(&mut self, from: u64, to: u64) {
        if self.version == Some(from) {
            self.version = Some(to);
        } else {
            self.reset(to);
        }
    }

    /// A commit from `from` to `to` appended `rows` (tenant, user, row id, event time, vector)
    /// and moved nothing else: cached users get their new rows, and a user in `new_users` (one
    /// with no rows before this commit) gets an entry of just these rows, since that is all of
    /// them. Other users stay uncached until a search loads them.
    pub fn extend<'a>(
        &mut self,
        from: Option<u64>,
        to: u64,
        dim: usize,
        rows: impl IntoIterator<Item = (&'a str, &'a str, u64, i64, &'a [f32])>,
        is_new_user: impl Fn(&str, &str) -> bool,
    ) {
        if from.is_none() || self.version != from {
            self.reset(to);
        }
        self.version = Some(to);
        let rows: Vec<_> = rows.into_iter().collect();
        let mut added: HashMap<(&str, &str), usize> = HashMap::new();
        for (tenant, user, ..) in &rows {
            *added.entry((tenant, user)).or_default() += 1;
        }
        let mut grown: HashMap<(String, String), UserVectors> = HashMap::new();
        for (tenant, user, row_id, ts, vector) in rows {
            let key = (tenant.to_string(), user.to_string());
            if !grown.contains_key(&key) {
                let start = match self.users.remove(&key) {
                    Some((entry, _)) => {
                        self.bytes -= entry.bytes();
                        // a search still holding the old entry keeps its own copy
                        Arc::try_unwrap(entry).unwrap_or_else(|shared| (*shared).clone())
                    }
                    None if is_new_user(tenant, user) => UserVectors::new(dim),
                    None => continue,
                };
                let mut start = start;
                start.reserve(added[&(tenant, user)]);
                grown.insert(key.clone(), start);
            }
            if let Some(entry) = grown.get_mut(&key) {
                entry.push(row_id, ts, vector);
            }
        }
        for ((tenant, user), entry) in grown {
            self.insert(to, &tenant, &user, entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (n(a) * n(b))
    }

    fn pseudo_random(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..dim)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    #[test]
    fn quantised_cosine_is_close_to_the_exact_one() {
        let dim = 384;
        let query = pseudo_random(1, dim);
        let mut user = UserVectors::new(dim);
        for i in 0..200 {
            user.push(i, 0, &pseudo_random(100 + i, dim));
        }
        let mut codes = Vec::new();
        let qf = quantise(&query, &mut codes);
        for i in 0..200 {
            let row = &user.codes[i * dim..(i + 1) * dim];
            let approx = dot_i8(&codes, row) as f32 * qf * user.factors[i];
            let exact = cosine(&query, &pseudo_random(100 + i as u64, dim));
            assert!(
                (approx - exact).abs() < 0.01,
                "row {i}: {approx} vs {exact}"
            );
        }
    }

    #[test]
    fn a_vector_is_its_own_nearest_and_scale_does_not_matter() {
        let dim = 64;
        let mut user = UserVectors::new(dim);
        for i in 0..50u64 {
            // rows of very different lengths: cosine ignores length
            let v: Vec<f32> = pseudo_random(i, dim)
                .into_iter()
                .map(|x| x * (1.0 + i as f32 * 10.0))
                .collect();
            user.push(1000 + i, i as i64, &v);
        }
        for i in 0..50u64 {
            let q: Vec<f32> = pseudo_random(i, dim)
                .into_iter()
                .map(|x| x * 0.01)
                .collect();
            assert_eq!(user.nearest(&q, 1, None), vec![1000 + i]);
        }
    }

    #[test]
    fn nearest_orders_best_first_and_filters_by_time() {
        let dim = 4;
        let mut user = UserVectors::new(dim);
        user.push(10, 100, &[1.0, 0.0, 0.0, 0.0]);
        user.push(11, 200, &[0.9, 0.1, 0.0, 0.0]);
        user.push(12, 300, &[0.0, 1.0, 0.0, 0.0]);
        user.push(13, 400, &[-1.0, 0.0, 0.0, 0.0]);
        user.push(14, 500, &[0.0, 0.0, 0.0, 0.0]);
        let q = [1.0, 0.0, 0.0, 0.0];
        assert_eq!(user.nearest(&q, 10, None), vec![10, 11, 12, 14, 13]);
        assert_eq!(user.nearest(&q, 2, None), vec![10, 11]);
        assert_eq!(user.nearest(&q, 10, Some(300)), vec![10, 11, 12]);
        assert_eq!(user.nearest(&q, 10, Some(99)), Vec::<u64>::new());
        assert_eq!(user.nearest(&q, 0, None), Vec::<u64>::new());
        // a query of another dimension finds nothing rather than misreading rows
        assert_eq!(user.nearest(&[1.0, 0.0], 10, None), Vec::<u64>::new());
    }

    #[test]
    fn entries_belong_to_one_version() {
        let dim = 4;
        let mut cache = VectorCache::new(1 << 20);
        cache.reset(1);
        let mut e = UserVectors::new(dim);
        e.push(1, 0, &[1.0, 0.0, 0.0, 0.0]);
        cache.insert(1, "t", "u", e.clone());
        assert!(cache.get(1, "t", "u").is_some());
        assert!(cache.get(2, "t", "u").is_none(), "another version");
        assert!(cache.get(1, "t2", "u").is_none(), "another tenant");
        // an index build moves no rows
        cache.carry(1, 2);
        assert_eq!(cache.get(2, "t", "u").unwrap().len(), 1);
        // an insert loaded from an older version is dropped
        cache.insert(1, "t", "v", e.clone());
        assert!(!cache.holds("t", "v"));
        // an append extends cached and new users, not uncached old ones
        let v = [0.0f32, 1.0, 0.0, 0.0];
        cache.extend(
            Some(2),
            3,
            dim,
            [
                ("t", "u", 7, 5, &v[..]),
                ("t", "new", 8, 5, &v[..]),
                ("t", "old", 9, 5, &v[..]),
            ],
            |_, user| user == "new",
        );
        assert_eq!(cache.get(3, "t", "u").unwrap().len(), 2);
        assert_eq!(cache.get(3, "t", "new").unwrap().len(), 1);
        assert!(!cache.holds("t", "old"));
        // an append onto a version the cache does not describe starts over
        cache.extend(Some(7), 8, dim, [("t", "x", 1, 1, &v[..])], |_, _| false);
        assert!(!cache.holds("t", "u"));
        cache.reset(9);
        assert!(cache.get(9, "t", "new").is_none());
    }

    #[test]
    fn the_budget_drops_the_least_recently_searched() {
        let dim = 100;
        let mut one = UserVectors::new(dim);
        for i in 0..10 {
            one.push(i, 0, &pseudo_random(i, dim));
        }
        let size = one.clone().bytes(); // what a stored copy holds (no spare capacity)
        let mut cache = VectorCache::new(size * 2 + size / 2);
        cache.reset(1);
        cache.insert(1, "t", "a", one.clone());
        cache.insert(1, "t", "b", one.clone());
        assert!(cache.get(1, "t", "a").is_some()); // a is now more recent than b
        cache.insert(1, "t", "c", one.clone());
        assert!(cache.holds("t", "a") && cache.holds("t", "c"));
        assert!(!cache.holds("t", "b"));
        // an entry over the whole budget is not kept
        let mut tiny = VectorCache::new(size / 2);
        tiny.reset(1);
        tiny.insert(1, "t", "a", one);
        assert!(!tiny.holds("t", "a"));
    }
}
