//! What a step told its bar in device time, for the unit tests of the
//! steps that estimate what is left ([`super::Progress::timed`]).

/// Each (device ns spent, estimated ns left) a step said.
#[derive(Default)]
pub struct Said(std::sync::Mutex<Vec<(u64, u64)>>);

impl super::Progress for Said {
    fn advance(&self, _: u64, _: u64) {
        panic!("the step tells its bar in device time");
    }

    fn timed(&self, spent_ns: u64, left_ns: u64) {
        self.0.lock().unwrap().push((spent_ns, left_ns));
    }
}

impl Said {
    /// The worst estimate of the step's length (spent + left) against
    /// `took`, its real length, either way, from 10% on (where the bar
    /// shows an ETA), and how many estimates that was. Device time said
    /// only goes forward.
    pub fn worst(self, took: f64) -> (f64, usize) {
        let said = self.0.into_inner().unwrap();
        assert!(said.windows(2).all(|w| w[1].0 >= w[0].0), "{said:?}");
        let shown: Vec<f64> = said
            .iter()
            .map(|&(spent, left)| (spent + left) as f64)
            .filter(|&whole| whole > 0.0)
            .zip(&said)
            .filter(|&(whole, &(spent, _))| spent as f64 >= 0.1 * whole)
            .map(|(whole, _)| if whole > took { whole / took } else { took / whole })
            .collect();
        (shown.iter().copied().fold(1.0, f64::max), shown.len())
    }
}
