# TEXTRACT / TINSERT with offsets from each PE's private GPRs (set in window.init.arrow:
# r1 = row offset, r2 = column offset, different on every PE).
#   t1 = a 16 x 16 U8 image.  Extract a 4 x 4 window at (r1, r2), store it transposed
#   (Layout DN), then write it back into the image at (r2, r1).
take:
BSTART.SFU TEXTRACT, U8
    B.IOT t1@0b1111 -> t2@0b1111
    B.DIM LB0=4, LB1=4
    B.DATR PAD=NULL, LAYOUT=DN
    B.IOR RegSrc0=r1, RegSrc1=r2
put:
BSTART.SFU TINSERT, U8
    B.IOT t1@0b1111, t2@0b1111 -> t3@0b1111
    B.DIM LB0=16, LB1=16
    B.IOR RegSrc0=r2, RegSrc1=r1
