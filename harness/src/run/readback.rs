//! After a trial whose device compare saw a difference: every buffer read back for the host
//! oracle (`run/oracle.rs`) and the report, and racegate's own device copies read back to tell a
//! kernel that wrote outside its buffers from a racegate bug. Part of [`super::launch::Gpu`].

use super::launch::{Gpu, Resident};
use crate::errors::{Error, Result};

impl Gpu {
    /// Reads every resident buffer back (after a failed trial, for the report), and restores
    /// inputs the kernel modified so the next trial of this input set starts clean.
    pub fn read_back(&self, res: &mut Resident) -> Result<Vec<Vec<u8>>> {
        let out: Vec<Vec<u8>> = res
            .bufs
            .iter()
            .map(|d| {
                self.stream
                    .clone_dtoh(d)
                    .map_err(|e| Error::cuda("reading back", e))
            })
            .collect::<Result<_>>()?;
        for ((d, p), e) in res.bufs.iter_mut().zip(&res.pristine).zip(&res.expected) {
            if let (Some(r), None) = (p, e) {
                if d.len() == r.len() {
                    self.stream
                        .memcpy_dtod(r, d)
                        .map_err(|e| Error::cuda("restoring an input", e))?;
                }
            }
        }
        Ok(out)
    }

    /// Reads back racegate's own device copies (pristine inputs, expected outputs). A kernel
    /// that writes outside its buffers can land in them; the caller compares with its host
    /// copies to tell that apart from a racegate bug.
    pub fn read_references(&self, res: &Resident) -> Result<Vec<Option<Vec<u8>>>> {
        res.expected
            .iter()
            .zip(&res.pristine)
            .map(|(e, p)| match e.as_ref().or(p.as_ref()) {
                Some(r) => self
                    .stream
                    .clone_dtoh(r)
                    .map(Some)
                    .map_err(|e| Error::cuda("reading back a reference", e)),
                None => Ok(None),
            })
            .collect()
    }
}
