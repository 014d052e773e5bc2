# TIMG2COL: a 3 x 3 convolution window over an FP16 NC1HWC0 feature map (N=1, C1=1, H=W=6,
# C0=16, 12 logical channels, stride 1, padding 1) in Matrix-location tile t1 of PE0.
# posM (r1) = 0 and posK (r2) = 16: rows 0..7 of the im2col matrix, columns 16..47
# (kernel positions 1 and 2 of the first kernel row).
cols:
BSTART.SFU TIMG2COL, FP16
    B.IOT t1@0b0001 -> t2@0b0001
    B.DIM LB0=32, LB1=8
    B.IOR RegSrc0=r1, RegSrc1=r2
