//! The relation (DEPREL) of each predicted arc, by a second, multiclass
//! averaged perceptron over hashed features of the arc conjoined with the
//! label (a pipeline after the unlabeled tree, as in McDonald et al. 2006's
//! two-stage parser). `O(F · |labels|)` per word.

use crate::features::{distance_bin, mix, Tokens};
use crate::Sentence;

/// The label features of arc `h → m` before conjunction with a label.
fn label_hashes(t: &Tokens, h: usize, m: usize, out: &mut Vec<u64>) {
    let (hi, mi) = (h as isize, m as isize);
    let (th, tm) = (t.at(hi), t.at(mi));
    let dir = u64::from(h < m);
    let dist = distance_bin(h, m);
    let parts: [&[u64]; 12] = [
        &[101],
        &[102, tm.upos],
        &[103, th.upos, tm.upos],
        &[104, th.upos, tm.upos, dir],
        &[105, tm.form],
        &[106, tm.lemma],
        &[107, th.lemma, tm.upos],
        &[108, dir, dist],
        &[109, tm.upos, t.at(mi + 1).upos],
        &[110, t.at(mi - 1).upos, tm.upos],
        &[111, th.upos, dir, dist],
        &[112, tm.upos, dir, dist],
    ];
    out.extend(
        parts
            .iter()
            .map(|p| p.iter().fold(0x2545_f491_4f6c_dd1d, |a, &x| mix(a, x))),
    );
}

/// A trained labeler: label names and averaged weights.
#[derive(Clone, Debug)]
pub struct Labeler {
    pub(crate) bits: u32,
    pub(crate) labels: Vec<String>,
    pub(crate) w: Vec<f64>,
}

impl Labeler {
    fn index(&self, feature: u64, label: usize) -> usize {
        (mix(feature, label as u64) & ((1u64 << self.bits) - 1)) as usize
    }

    fn best(&self, w: &[f64], hashes: &[u64]) -> usize {
        let mut best = (f64::NEG_INFINITY, 0);
        for l in 0..self.labels.len() {
            let s: f64 = hashes.iter().map(|&f| w[self.index(f, l)]).sum();
            if s > best.0 {
                best = (s, l);
            }
        }
        best.1
    }

    /// Trains on the gold arcs of `sentences` for `epochs` passes in the
    /// given order. `O(epochs · tokens · F · |labels|)`.
    pub fn train(sentences: &[Sentence], bits: u32, epochs: usize) -> Labeler {
        let mut labels: Vec<String> = sentences
            .iter()
            .flat_map(|s| s.words.iter().map(|w| w.label.clone()))
            .collect();
        labels.sort();
        labels.dedup();
        let size = 1usize << bits;
        let mut lab = Labeler {
            bits,
            labels,
            w: vec![0.0; size],
        };
        let mut u = vec![0.0; size];
        let mut c = 1.0;
        let mut buf = Vec::new();
        for _ in 0..epochs {
            for s in sentences {
                let t = Tokens::new(s);
                for (i, word) in s.words.iter().enumerate() {
                    buf.clear();
                    label_hashes(&t, word.head, i + 1, &mut buf);
                    let guess = lab.best(&lab.w, &buf);
                    let gold = lab.labels.binary_search(&word.label).unwrap_or(guess);
                    if guess != gold {
                        for &f in &buf {
                            let (a, b) = (lab.index(f, gold), lab.index(f, guess));
                            lab.w[a] += 1.0;
                            u[a] += c;
                            lab.w[b] -= 1.0;
                            u[b] -= c;
                        }
                    }
                    c += 1.0;
                }
            }
        }
        for (w, u) in lab.w.iter_mut().zip(&u) {
            *w -= u / c;
        }
        lab
    }

    /// The label of every word given its head. `O(n · F · |labels|)`.
    pub fn predict(&self, sentence: &Sentence, heads: &[usize]) -> Vec<String> {
        if self.labels.is_empty() {
            return vec!["dep".to_string(); heads.len()];
        }
        let t = Tokens::new(sentence);
        let mut buf = Vec::new();
        heads
            .iter()
            .enumerate()
            .map(|(i, &h)| {
                buf.clear();
                label_hashes(&t, h, i + 1, &mut buf);
                self.labels[self.best(&self.w, &buf)].clone()
            })
            .collect()
    }
}
