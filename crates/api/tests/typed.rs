//! The typed information table: offered exactly where the JSON route offers
//! the logarithmic quantities, and its values are the enumerated ones.

use spantree_api::{Backend, BackendKind, Quantity, WithBackend};
use spantree_core::{Graph, Matrix, Model, Rooting, Scalar};

/// Weights of three multi-root trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}:
/// 1·2, 1·3 and 2·4 out of 13.
const W: [[f64; 3]; 3] = [[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]];

struct Check;

impl WithBackend for Check {
    type Output = Option<(f64, f64)>;
    fn run<B: Backend>(self, backend: &B) -> Self::Output {
        let info = B::information()?;
        let graph = Graph::from_weights(&W).expect("valid");
        let model = Model::new(backend.clone(), &graph, Rooting::Multi).expect("a tree exists");
        let h = (info.entropy)(&model).expect("entropy").to_f64();
        let kl_self = (info.kl)(&model, &model).expect("kl").to_f64();
        Some((h, kl_self))
    }
}

#[test]
fn information_exactly_where_logarithms_are() {
    let entropy: Quantity = "entropy".parse().expect("registered");
    for kind in BackendKind::ALL {
        let offered = kind.dispatch(Check);
        assert_eq!(offered.is_some(), entropy.check(kind).is_ok(), "{kind}");
        if let Some((h, kl_self)) = offered {
            // The entropy of the three trees, enumerated by hand; KL(p ‖ p) = 0.
            let expected: f64 = [2.0, 3.0, 8.0]
                .iter()
                .map(|w: &f64| -(w / 13.0) * (w / 13.0).ln())
                .sum();
            let weights = Matrix::from_fn(3, 3, |h, m| W[h][m]);
            let z = spantree_bruteforce::partition(&weights, Rooting::Multi);
            assert_eq!(z, 13.0);
            // rel 1e-14: one 2×2 elimination.
            assert!(
                (h - expected).abs() < 1e-14 * expected,
                "{kind}: {h} vs {expected}"
            );
            assert!(kl_self.abs() < 1e-14, "{kind}: {kl_self}");
        }
    }
}
