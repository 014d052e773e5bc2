# |a - b| for signed 32-bit integers with a compare and a select, on PEs 0 and 1.
#   t1 = a, t2 = b (4 x 8 S32, ValidCol 6 of 8 columns: the last two columns are padding).
diff_ab:
BSTART.VEC TSUB, S32
    B.IOT t1@0b0011, t2@0b0011 -> t3@0b0011 CAP=128
    B.DIM LB0=6, LB1=4, LB2=8
    B.DATR PAD=ZERO
diff_ba:
BSTART.VEC TSUB, S32
    B.IOT t2@0b0011, t1@0b0011 -> t4@0b0011 CAP=128
    B.DIM LB0=6, LB1=4, LB2=8
    B.DATR PAD=ZERO
a_gt_b:                                  # packed predicate: bit i%8 of byte i//8
BSTART.VEC TCMP, S32
    B.IOT t1@0b0011, t2@0b0011 -> t5@0b0011
    B.DIM LB0=6, LB1=4, LB2=8
    B.DATR PAD=ZERO, CMODE=GT
pick:
BSTART.VEC TSEL, S32
    B.IOT t5@0b0011, t3@0b0011, t4@0b0011 -> t6@0b0011 CAP=128
    B.DIM LB0=6, LB1=4, LB2=8
    B.DATR PAD=MIN                       # outside the valid rectangle: INT32_MIN
