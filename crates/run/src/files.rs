//! The readers of perf.data (the recorder's) and of store files (an exported run, or a
//! store given as a file) that `kiln_formats::read` is given: the profile formats' table
//! reads them without linking the recorder or the store.
use kiln_formats::{BoxError, PerfDataRead, PerfDataRequest};
use kiln_model::Profile;
use kiln_store::Store;
use std::path::Path;

/// perf.data through `kiln_record`, store files through `kiln_store`.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileReaders;

impl kiln_formats::FileReaders for FileReaders {
    fn perf_data(&self, path: &Path, how: &PerfDataRequest) -> Result<PerfDataRead, BoxError> {
        let opts = kiln_record::perf_data::PerfDataOptions {
            naming: kiln_record::NamingOptions {
                annotate_kernel: how.annotate_kernel,
                annotate_jit: how.annotate_jit,
            },
            count_samples: how.count_samples,
        };
        let (profiles, s) = kiln_record::perf_data::read_with_summary(path, &opts)?;
        Ok(PerfDataRead {
            profiles,
            samples: s.samples,
            warnings: s.warnings,
            lost: s.lost,
            bad_records: s.bad_records,
        })
    }

    fn run_store(&self, path: &Path, max_input: u64) -> Result<Vec<Profile>, BoxError> {
        let mut store = kiln_store::SqliteStore::open_existing(path)?;
        store.set_max_input(max_input);
        let runs = store.list()?;
        let Some(last) = runs.last() else {
            return Err("it holds no run".into());
        };
        let mut merged: Vec<Profile> = Vec::new();
        for r in runs.iter().filter(|r| r.group == last.group) {
            let Some(id) = r.id else { continue };
            for p in store.profiles(id)? {
                match merged.iter_mut().find(|m| m.event.name == p.event.name) {
                    Some(m) => m.merge_from(&p),
                    None => merged.push(p),
                }
            }
        }
        Ok(merged)
    }
}

/// Read options that read every format kiln knows, perf.data and store files included,
/// an input read whole or inflated to at most `max_input` bytes (the input limit).
pub fn read_options(max_input: u64) -> kiln_formats::ReadOptions {
    kiln_formats::ReadOptions {
        files: Some(std::sync::Arc::new(FileReaders)),
        max_input,
        ..Default::default()
    }
}
