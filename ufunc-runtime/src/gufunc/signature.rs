//! A gufunc's layout as data, and binding it to the shapes of one call: which optional
//! dimensions are missing, the size of every core dimension, the loop shape, the output shapes.

use crate::error::{Error, Result};
use crate::shape::broadcast_shape;

/// One core dimension of a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreDim {
    /// A named dimension (`n`), possibly optional (`n?`, NEP 20).
    Named {
        /// The name.
        name: &'static str,
        /// Whether an operand may lack it.
        optional: bool,
    },
    /// A fixed size (`3`).
    Fixed(usize),
}

/// A gufunc layout such as `(m,n),(n,p)->(m,p)`, with the parameter names of its operands.
#[derive(Debug, Clone, Copy)]
pub struct Signature {
    /// The layout as written.
    pub text: &'static str,
    /// Core dimensions of each input.
    pub inputs: &'static [&'static [CoreDim]],
    /// Core dimensions of each output.
    pub outputs: &'static [&'static [CoreDim]],
    /// Names of the inputs then the outputs, for messages.
    pub names: &'static [&'static str],
    /// An in-place layout (Numba's, without `->`): the outputs are operands the core writes,
    /// passed in with the inputs. They take part in the loop shape and must have it whole (a
    /// written operand cannot be broadcast).
    pub in_place: bool,
}

/// The result of binding a [`Signature`] to the shapes of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreBinding {
    /// The broadcast shape of the loop dimensions.
    pub loop_shape: Vec<usize>,
    /// Per operand (inputs then outputs), the core shape the body sees: every dimension of the
    /// layout, a missing optional one with length 1.
    pub core_shapes: Vec<Vec<usize>>,
    /// Per operand, for each core dimension the body sees, the axis of the array that holds it
    /// (`None` for a missing optional dimension).
    pub core_axes: Vec<Vec<Option<usize>>>,
    /// The full shape of each output array: loop shape, then its present core dimensions.
    pub output_shapes: Vec<Vec<usize>>,
}

fn core_text(dims: &[CoreDim]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d {
            CoreDim::Named { name, optional } => {
                format!("{name}{}", if *optional { "?" } else { "" })
            }
            CoreDim::Fixed(n) => n.to_string(),
        })
        .collect();
    format!("({})", parts.join(","))
}

impl Signature {
    /// Binds the layout to the input shapes and, for `out` calls, the output shapes.
    ///
    /// ```
    /// use ufunc_runtime::{CoreDim, Signature};
    /// const M: CoreDim = CoreDim::Named { name: "m", optional: false };
    /// const N: CoreDim = CoreDim::Named { name: "n", optional: false };
    /// const P: CoreDim = CoreDim::Named { name: "p", optional: false };
    /// let sig = Signature {
    ///     text: "(m,n),(n,p)->(m,p)",
    ///     inputs: &[&[M, N], &[N, P]],
    ///     outputs: &[&[M, P]],
    ///     names: &["a", "b", "c"],
    ///     in_place: false,
    /// };
    /// let b = sig.bind(&[&[7, 1, 3, 4], &[5, 4, 2]], None).unwrap();
    /// assert_eq!(b.loop_shape, vec![7, 5]);
    /// assert_eq!(b.output_shapes, vec![vec![7, 5, 3, 2]]);
    /// let err = sig.bind(&[&[3, 4], &[5, 2]], None).unwrap_err();
    /// assert_eq!(err.to_string(), "core dimension `n` has size 4 in `a` but 5 in `b`");
    /// ```
    pub fn bind(&self, inputs: &[&[usize]], outputs: Option<&[&[usize]]>) -> Result<CoreBinding> {
        let n_in = self.inputs.len();
        let counts = [
            ("inputs", n_in, Some(inputs.len())),
            ("outputs", self.outputs.len(), outputs.map(<[_]>::len)),
        ];
        for (kind, expected, found) in counts {
            match found {
                Some(found) if found != expected => {
                    return Err(Error::OperandCount {
                        layout: self.text,
                        kind,
                        expected,
                        found,
                    })
                }
                _ => {}
            }
        }
        let all_dims: Vec<&[CoreDim]> = self.inputs.iter().chain(self.outputs).copied().collect();
        // 1. Optional dimensions an input lacks are missing everywhere.
        let mut missing: Vec<&str> = Vec::new();
        for (i, (dims, shape)) in self.inputs.iter().zip(inputs).enumerate() {
            let need = dims.len().saturating_sub(shape.len());
            let optional: Vec<&str> = dims
                .iter()
                .filter_map(|d| match d {
                    CoreDim::Named {
                        name,
                        optional: true,
                    } => Some(*name),
                    _ => None,
                })
                .collect();
            if need > optional.len() {
                return Err(Error::CoreRank {
                    operand: self.names[i],
                    ndim: shape.len(),
                    core: core_text(dims),
                    needed: dims.len() - optional.len(),
                });
            }
            for name in optional.into_iter().take(need) {
                if !missing.contains(&name) {
                    missing.push(name);
                }
            }
        }
        let is_missing =
            |d: &CoreDim| matches!(d, CoreDim::Named { name, .. } if missing.contains(name));
        let present = |dims: &[CoreDim]| dims.iter().filter(|d| !is_missing(d)).count();

        // 2. Sizes of named dimensions, from inputs, then (for output-only ones) from outputs.
        let mut sizes: Vec<(&'static str, usize, &'static str)> = Vec::new();
        let mut record = |operand: usize, dims: &[CoreDim], shape: &[usize]| -> Result<()> {
            let core = &shape[shape.len() - present(dims)..];
            for (d, &size) in dims.iter().filter(|d| !is_missing(d)).zip(core) {
                match *d {
                    CoreDim::Fixed(expected) if expected != size => {
                        return Err(Error::FixedCoreDim {
                            operand: self.names[operand],
                            expected,
                            found: size,
                        })
                    }
                    CoreDim::Fixed(_) => {}
                    CoreDim::Named { name, .. } => match sizes.iter().find(|s| s.0 == name) {
                        Some(&(_, first_size, first)) if first_size != size => {
                            return Err(Error::CoreDimMismatch {
                                dim: name,
                                first,
                                first_size,
                                operand: self.names[operand],
                                size,
                            })
                        }
                        Some(_) => {}
                        None => sizes.push((name, size, self.names[operand])),
                    },
                }
            }
            Ok(())
        };
        for (i, (dims, shape)) in self.inputs.iter().zip(inputs).enumerate() {
            record(i, dims, shape)?;
        }
        if let Some(outs) = outputs {
            for (o, (dims, shape)) in self.outputs.iter().zip(outs).enumerate() {
                if shape.len() < present(dims) {
                    return Err(Error::CoreRank {
                        operand: self.names[n_in + o],
                        ndim: shape.len(),
                        core: core_text(dims),
                        needed: present(dims),
                    });
                }
                record(n_in + o, dims, shape)?;
            }
        }
        let size_of = |d: &CoreDim, output: &'static str| -> Result<usize> {
            match *d {
                CoreDim::Fixed(n) => Ok(n),
                _ if is_missing(d) => Ok(1),
                CoreDim::Named { name, .. } => sizes
                    .iter()
                    .find(|s| s.0 == name)
                    .map(|s| s.1)
                    .ok_or(Error::UnboundOutputDim { dim: name, output }),
            }
        };

        // 3. The loop shape: the inputs' leading (non-core) dimensions, broadcast (with those of
        // the operands an in-place layout writes).
        let written = outputs.filter(|_| self.in_place).unwrap_or(&[]);
        let loop_parts: Vec<&[usize]> = self
            .inputs
            .iter()
            .chain(self.outputs)
            .zip(inputs.iter().chain(written))
            .map(|(dims, shape)| &shape[..shape.len() - present(dims)])
            .collect();
        let loop_shape = broadcast_shape(loop_parts.len(), |i| loop_parts[i])
            .map_err(|_| Error::LoopBroadcast {
                shapes: loop_parts
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (self.names[i], s.to_vec()))
                    .collect(),
            })?
            .to_vec();
        for (o, part) in loop_parts[n_in..].iter().enumerate() {
            if *part != loop_shape.as_slice() {
                return Err(Error::InPlaceBroadcast {
                    operand: self.names[n_in + o],
                    shape: written[o].to_vec(),
                    loop_shape,
                });
            }
        }

        // 4. What the body sees, and the output arrays' shapes.
        let mut core_shapes = Vec::with_capacity(all_dims.len());
        let mut core_axes = Vec::with_capacity(all_dims.len());
        for (k, dims) in all_dims.iter().enumerate() {
            let ndim = if k < n_in {
                inputs[k].len()
            } else {
                loop_shape.len() + present(dims)
            };
            let mut axis = ndim - present(dims);
            let mut shape = Vec::with_capacity(dims.len());
            let mut axes = Vec::with_capacity(dims.len());
            for d in dims.iter() {
                shape.push(size_of(d, self.names[k])?);
                if is_missing(d) {
                    axes.push(None);
                } else {
                    axes.push(Some(axis));
                    axis += 1;
                }
            }
            core_shapes.push(shape);
            core_axes.push(axes);
        }
        let output_shapes = (0..self.outputs.len())
            .map(|o| {
                let k = n_in + o;
                let mut s = loop_shape.clone();
                s.extend(
                    core_shapes[k]
                        .iter()
                        .zip(&core_axes[k])
                        .filter(|(_, a)| a.is_some())
                        .map(|(n, _)| *n),
                );
                s
            })
            .collect();
        Ok(CoreBinding {
            loop_shape,
            core_shapes,
            core_axes,
            output_shapes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn named(name: &'static str) -> CoreDim {
        CoreDim::Named {
            name,
            optional: false,
        }
    }
    const fn opt(name: &'static str) -> CoreDim {
        CoreDim::Named {
            name,
            optional: true,
        }
    }

    const MATMUL: Signature = Signature {
        text: "(m?,n),(n,p?)->(m?,p?)",
        inputs: &[&[opt("m"), named("n")], &[named("n"), opt("p")]],
        outputs: &[&[opt("m"), opt("p")]],
        names: &["a", "b", "c"],
        in_place: false,
    };

    #[test]
    fn wrong_operand_counts_are_errors() {
        let err = MATMUL.bind(&[&[2, 3]], None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "layout `(m?,n),(n,p?)->(m?,p?)` has 2 inputs, but 1 were given"
        );
        let err = MATMUL.bind(&[&[2, 3], &[3, 4]], Some(&[])).unwrap_err();
        assert!(matches!(
            err,
            Error::OperandCount {
                kind: "outputs",
                expected: 1,
                found: 0,
                ..
            }
        ));
    }

    #[test]
    fn optional_dims_follow_np_matmul() {
        // (3,4) @ (4,) -> (3,)
        let b = MATMUL.bind(&[&[3, 4], &[4]], None).unwrap();
        assert_eq!(b.output_shapes, vec![vec![3]]);
        assert_eq!(b.core_shapes, vec![vec![3, 4], vec![4, 1], vec![3, 1]]);
        assert_eq!(b.core_axes[1], vec![Some(0), None]);
        // (4,) @ (4,) -> ()
        let b = MATMUL.bind(&[&[4], &[4]], None).unwrap();
        assert_eq!(b.output_shapes, vec![Vec::<usize>::new()]);
        // (2,1,3,4) @ (5,4,6) -> (2,5,3,6)
        let b = MATMUL.bind(&[&[2, 1, 3, 4], &[5, 4, 6]], None).unwrap();
        assert_eq!(b.loop_shape, vec![2, 5]);
        assert_eq!(b.output_shapes, vec![vec![2, 5, 3, 6]]);
        // A scalar has too few dimensions even with both optional ones missing.
        let e = MATMUL.bind(&[&[], &[4]], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`a` has 0 dimension(s) but its core dimensions (m?,n) need at least 1"
        );
    }

    #[test]
    fn fixed_and_output_only_dims() {
        const CROSS: Signature = Signature {
            text: "(3),(3)->(3)",
            inputs: &[&[CoreDim::Fixed(3)], &[CoreDim::Fixed(3)]],
            outputs: &[&[CoreDim::Fixed(3)]],
            names: &["u", "v", "w"],
            in_place: false,
        };
        assert_eq!(
            CROSS.bind(&[&[10, 3], &[3]], None).unwrap().output_shapes,
            vec![vec![10, 3]]
        );
        let e = CROSS.bind(&[&[10, 4], &[3]], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`u` has size 4 where its layout fixes a core dimension of size 3"
        );
        const HIST: Signature = Signature {
            text: "(n)->(k)",
            inputs: &[&[named("n")]],
            outputs: &[&[named("k")]],
            names: &["x", "counts"],
            in_place: false,
        };
        let e = HIST.bind(&[&[5, 100]], None).unwrap_err();
        assert!(matches!(
            e,
            Error::UnboundOutputDim {
                dim: "k",
                output: "counts"
            }
        ));
        let b = HIST.bind(&[&[5, 100]], Some(&[&[5, 16]])).unwrap();
        assert_eq!(b.core_shapes[1], vec![16]);
        assert_eq!(b.output_shapes, vec![vec![5, 16]]);
    }

    #[test]
    fn loop_dims_must_broadcast() {
        const DOT: Signature = Signature {
            text: "(n),(n)->()",
            inputs: &[&[named("n")], &[named("n")]],
            outputs: &[&[]],
            names: &["a", "b", "return value"],
            in_place: false,
        };
        let e = DOT.bind(&[&[3, 4], &[5, 4]], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "loop dimensions could not be broadcast together: `a` (3,) `b` (5,)"
        );
        let b = DOT.bind(&[&[0, 4], &[4]], None).unwrap();
        assert_eq!(b.output_shapes, vec![vec![0]]);
        let b = DOT.bind(&[&[2, 0], &[1, 0]], None).unwrap();
        assert_eq!(b.core_shapes[0], vec![0]);
    }
}
