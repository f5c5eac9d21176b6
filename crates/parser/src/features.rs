//! First-order arc features (McDonald, Crammer & Pereira 2005), hashed into a
//! fixed-size weight vector.
//!
//! For an arc `h → m` the templates read the forms (lower-cased), lemmas and
//! UPOS tags of the head and the dependent, the UPOS tags between them and
//! around them, the arc's direction and its binned distance. Every template
//! is emitted twice: alone, and conjoined with direction and distance, as in
//! McDonald et al. The root is a pseudo-token `<root>`; positions outside the
//! sentence read `<s>` and `</s>`.
//!
//! A template instance is a 64-bit hash of its parts (FNV-1a for the
//! strings, a SplitMix64 finaliser to combine), reduced to `bits` bits: a
//! collision merges two features, which with `2^21` slots and a treebank of a
//! few thousand sentences touches a small share of them. Hashes are fixed
//! (no random state), so a model file holds only the weights.
//!
//! [`SentenceFeatures`] lists the indices of every arc once per sentence, so
//! that training never hashes in its inner loop; scoring a sentence is then
//! `O(F n²)` for `F` features per arc, against the `O(n³)` of the
//! expectations.

use crate::Sentence;

/// FNV-1a, 64 bits: a fixed, portable hash of a string.
pub(crate) fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Combines a running hash with one more part (SplitMix64's finaliser over
/// the sum, so that order matters).
pub(crate) fn mix(h: u64, x: u64) -> u64 {
    let mut z = h.rotate_left(5) ^ x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn mix_all(parts: &[u64]) -> u64 {
    parts.iter().fold(0x51_7cc1_b727_220a, |h, &x| mix(h, x))
}

/// The hashed strings of one token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub form: u64,
    pub lemma: u64,
    pub upos: u64,
}

impl Token {
    fn pseudo(name: &str) -> Token {
        let h = hash_str(name);
        Token {
            form: h,
            lemma: h,
            upos: h,
        }
    }
}

/// The tokens `0..=n` of a sentence (`0` the root pseudo-token), plus the
/// boundary pseudo-tokens at `n + 1` (`</s>`) and, by convention, `<s>` for
/// the position before the root.
pub(crate) struct Tokens {
    tokens: Vec<Token>,
    start: Token,
}

impl Tokens {
    pub(crate) fn new(sentence: &Sentence) -> Tokens {
        let mut tokens = Vec::with_capacity(sentence.words.len() + 2);
        tokens.push(Token::pseudo("<root>"));
        for w in &sentence.words {
            tokens.push(Token {
                form: hash_str(&w.form.to_lowercase()),
                lemma: hash_str(&w.lemma.to_lowercase()),
                upos: hash_str(&w.upos),
            });
        }
        tokens.push(Token::pseudo("</s>"));
        Tokens {
            tokens,
            start: Token::pseudo("<s>"),
        }
    }

    /// The token at position `i` (`-1` is `<s>`, `n + 1` is `</s>`).
    pub(crate) fn at(&self, i: isize) -> Token {
        if i < 0 {
            self.start
        } else {
            self.tokens[(i as usize).min(self.tokens.len() - 1)]
        }
    }

    pub(crate) fn n(&self) -> usize {
        self.tokens.len() - 2
    }
}

/// The distance bins of McDonald et al.: 1, 2, 3, 4, 5–9, 10 and more.
pub(crate) fn distance_bin(h: usize, m: usize) -> u64 {
    match h.abs_diff(m) {
        d @ 1..=4 => d as u64,
        5..=9 => 5,
        _ => 6,
    }
}

/// The feature hashes of arc `h → m` (before reduction to `bits`), appended
/// to `out`. `O(|h − m|)` for the tags in between.
pub(crate) fn arc_hashes(t: &Tokens, h: usize, m: usize, out: &mut Vec<u64>) {
    let (hi, mi) = (h as isize, m as isize);
    let (th, tm) = (t.at(hi), t.at(mi));
    let (hp, mp) = (th.upos, tm.upos);
    let (hf, mf) = (th.form, tm.form);
    let (hl, ml) = (th.lemma, tm.lemma);
    // The root's neighbours: nothing before it, word 1 after it.
    let hp_prev = if h == 0 {
        t.at(-1).upos
    } else {
        t.at(hi - 1).upos
    };
    let hp_next = t.at(hi + 1).upos;
    let mp_prev = t.at(mi - 1).upos;
    let mp_next = t.at(mi + 1).upos;
    let dir = u64::from(h < m);
    let dd = mix(dir, distance_bin(h, m));
    let start = out.len();
    let templates: [&[u64]; 22] = [
        &[1],
        &[2, hf, hp],
        &[3, hf],
        &[4, hp],
        &[5, mf, mp],
        &[6, mf],
        &[7, mp],
        &[8, hf, hp, mf, mp],
        &[9, hp, mf, mp],
        &[10, hf, mf, mp],
        &[11, hf, hp, mp],
        &[12, hf, hp, mf],
        &[13, hf, mf],
        &[14, hp, mp],
        &[15, hl, ml],
        &[16, hl, mp],
        &[17, hp, ml],
        &[18, hl],
        &[19, ml],
        &[20, hp, hp_next, mp_prev, mp],
        &[21, hp_prev, hp, mp_prev, mp],
        &[22, hp, hp_next, mp, mp_next],
    ];
    for parts in templates {
        out.push(mix_all(parts));
    }
    out.push(mix_all(&[23, hp_prev, hp, mp, mp_next]));
    out.push(mix_all(&[24, hp, hp_next, mp]));
    out.push(mix_all(&[25, hp, mp_prev, mp]));
    // The tags in between, each distinct tag once.
    let (lo, up) = (h.min(m), h.max(m));
    let mut seen: Vec<u64> = Vec::new();
    for b in lo + 1..up {
        let bp = t.at(b as isize).upos;
        if !seen.contains(&bp) {
            seen.push(bp);
            out.push(mix_all(&[26, hp, bp, mp]));
        }
    }
    let end = out.len();
    for i in start..end {
        let conj = mix(out[i], dd);
        out.push(conj);
    }
}

/// The feature indices of every arc of one sentence, computed once.
///
/// Arc `h → m` (`h ∈ 0..=n`, `m ∈ 1..=n`, `h ≠ m`) owns
/// `indices[offsets[a]..offsets[a + 1]]` with `a = h (n + 1) + m`; cells that
/// are not arcs own nothing. Memory `O(F n²)`.
#[derive(Clone, Debug)]
pub struct SentenceFeatures {
    n: usize,
    offsets: Vec<u32>,
    indices: Vec<u32>,
}

impl SentenceFeatures {
    /// Extracts and hashes the features of every arc of `sentence` into
    /// `0..2^bits`. `O(F n² + n³)` (the tags in between), once per sentence.
    pub fn new(sentence: &Sentence, bits: u32) -> SentenceFeatures {
        let tokens = Tokens::new(sentence);
        let n = tokens.n();
        let n1 = n + 1;
        let mask = (1u64 << bits) - 1;
        let mut offsets = Vec::with_capacity(n1 * n1 + 1);
        let mut indices = Vec::new();
        let mut buf = Vec::new();
        offsets.push(0);
        for h in 0..n1 {
            for m in 0..n1 {
                if m != 0 && h != m {
                    buf.clear();
                    arc_hashes(&tokens, h, m, &mut buf);
                    indices.extend(buf.iter().map(|&x| (x & mask) as u32));
                }
                offsets.push(indices.len() as u32);
            }
        }
        SentenceFeatures {
            n,
            offsets,
            indices,
        }
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The feature indices of arc `h → m` (empty for non-arcs).
    pub fn arc(&self, h: usize, m: usize) -> &[u32] {
        let a = h * (self.n + 1) + m;
        &self.indices[self.offsets[a] as usize..self.offsets[a + 1] as usize]
    }

    /// The stored indices in all, `O(F n²)`.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether no index is stored (never for a sentence with two words or more).
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// Arc scores `θ[h][m] = w · f(h → m)` in the `(n+1) × (n+1)` layout
    /// (non-arcs `−∞`). `O(F n²)`.
    pub fn scores(&self, w: &[f64]) -> Vec<Vec<f64>> {
        let n1 = self.n + 1;
        (0..n1)
            .map(|h| {
                (0..n1)
                    .map(|m| {
                        if m == 0 || h == m {
                            f64::NEG_INFINITY
                        } else {
                            self.arc(h, m).iter().map(|&i| w[i as usize]).sum()
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// Adds `scale · Σ_{h,m} g[h][m] f(h → m)` to `grad`, skipping zero cells.
    /// `O(F n²)`.
    pub fn accumulate(&self, g: &[Vec<f64>], scale: f64, grad: &mut [f64]) {
        for (h, row) in g.iter().enumerate() {
            for (m, &v) in row.iter().enumerate() {
                if v != 0.0 && m != 0 && h != m {
                    for &i in self.arc(h, m) {
                        grad[i as usize] += scale * v;
                    }
                }
            }
        }
    }

    /// Appends `(index, scale · g[h][m])` for every non-zero cell to a sparse
    /// list, `O(F n²)`.
    pub fn accumulate_sparse(&self, g: &[Vec<f64>], scale: f64, out: &mut Vec<(u32, f64)>) {
        for (h, row) in g.iter().enumerate() {
            for (m, &v) in row.iter().enumerate() {
                if v != 0.0 && m != 0 && h != m {
                    out.extend(self.arc(h, m).iter().map(|&i| (i, scale * v)));
                }
            }
        }
    }
}
