//! What other tools printed or recorded, read into flashlab: flashbench's
//! text output, judged into results (`flashlab import flashbench FILE...`),
//! and block I/O traces (blkparse, blktrace, fio iologs, biosnoop) streamed
//! as requests for a replay (`trace`). Above the tests (it fills their
//! results, judged by their rules) and below the document (the command puts
//! them in one).

pub mod flashbench;
pub mod trace;
