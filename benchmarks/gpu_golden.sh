#!/bin/sh
# Device differential check of the batch engine for every instruction the golden generator
# covers: generate golden cases on the CPU (the `cpu` batch engine, itself differential-tested
# against the reference Machine), then replay every case on BACKEND (default gpu) and compare
# every field.  A step of benchmarks/gpu_check.sh; runs anywhere with BACKEND=cpu.
#   sh benchmarks/gpu_golden.sh OUT_DIR [CASES_PER_PARTITION]
set -eu
out=$1
cases=${2:-128}
backend=${BACKEND:-gpu}
rm -rf "$out"
mkdir -p "$out"
run() {   # run NAME golden-arguments...: generate into $out/NAME, replay on $backend
    name=$1; shift
    tile-emu golden "$@" --cases "$cases" --seed 13 --out "$out/$name" --quiet
    tile-emu verify "$out/$name" --backend "$backend" --quiet
}
run elementwise --ops TADD,TSUB,TMUL,TDIV,TREM,TMAX,TMIN,TCMP,TABS,TNEG,TRELU,TSEL,TFMA \
    --dtypes FP64,FP32,TF32,HF32,FP16,BF16,E4M3,E5M2,S64,S32,S16,S8,U64,U32,U16,U8
if python3 -c "import gmpy2" 2>/dev/null; then      # TEXP/TLOG/TRSQRT settle rare elements with MPFR
    run floating --ops TEXP,TLOG,TRECIP,TSQRT,TRSQRT --dtypes FP64,FP32,TF32,HF32,FP16,BF16,E4M3,E5M2
else
    echo "gpu_golden: gmpy2 missing (carry .whl, see gpu_check.sh): TEXP, TLOG, TRSQRT skipped"
    run floating --ops TRECIP,TSQRT --dtypes FP64,FP32,TF32,HF32,FP16,BF16,E4M3,E5M2
fi
run integer --ops TAND,TOR,TXOR,TSHL,TSHR,TNOT --dtypes S64,S32,S16,S8,U64,U32,U16,U8
run convert --ops TCVT --dtypes FP64,FP32,FP16,BF16,HiF8,E4M3,E2M1X2,S8,U4X2 --rmodes RNE,RTZ --sat 0,1
# profile a5 (docs/numerics.md "Profile a5"): its recipes and its non-saturating/same-type TCVT
run a5 --profile a5 --ops TRSQRT,TREM,TDIV,TRECIP --dtypes FP32,FP16
run a5-convert --profile a5 --ops TCVT --dtypes FP32,FP16 --dst-dtypes FP32,S16,S8,U8 --rmodes RNE,RTZ,RTM --sat 0
run movement --ops TEXTRACT,TINSERT \
    --dtypes FP64,FP32,TF32,HF32,FP16,BF16,HiF8,E4M3,E5M2,E3M2,E2M3,E2M1X2,E1M2X2,E8M0,S64,S32,S16,S8,S4X2,U64,U32,U16,U8,U4X2
run img2col --ops TIMG2COL --dtypes FP32,FP16,BF16,S32,S16,S8,U32,U16,U8   # isa.datatypes.IMG2COL
echo "gpu_golden: every case matches on $backend"
