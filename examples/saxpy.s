# saxpy: y <- a * x + y on all four PEs, one fused FP32 multiply-add per element (TFMA).
#   t1 = a (broadcast), t2 = x, t3 = y: 4 x 16 FP32 tiles from examples/saxpy.init.arrow.
# The destination renames t3: the old y is read (snapshot) and then released at commit.
saxpy:
BSTART.VEC TFMA, FP32
    B.IOT t1@0b1111, t2@0b1111, t3@0b1111 -> t3@0b1111
    B.DIM LB0=16, LB1=4
