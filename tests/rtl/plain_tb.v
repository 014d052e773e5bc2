// A plain Verilog testbench (no cocotb, no project Python at simulation time) that reads a hex
// export from the files docs/golden-format.md documents, and nothing else:
//
//   +single=DIR   a single-block partition of an integer binary instruction (TADD/TSUB of a
//                 signed or unsigned integer DataType): index.txt's line counts are recounted,
//                 fields.txt printed per case (FIELDS ...), and every committed NORM lane's
//                 destination recomputed from left.hex/right.hex inside the valid rectangle,
//                 with definedness checked both ways outside it (PadValue NULL: dst_def 0;
//                 ZERO/MAX/MIN: dst_def 1).
//   +stream=DIR   a stream partition: index.txt recounted, machine.txt printed per case (MACHINE
//                 ...), tile_info.txt per tile (TILE ...), and tiles.txt's n checked against
//                 Row x Col of each standard-representation tile.
//
// Prints "PASS" at the end, or "FAIL ..." lines.
module plain_tb;
  reg [8*512:1] dir, path, name;
  reg [8*4096:1] line;
  reg [8*32:1] w0, w1, w2, w3, w4, w5, w6;
  integer fd, fi, rc, n, got, fails, checked, pads;
  // index.txt
  reg [8*32:1] names [0:31];
  integer counts [0:31];
  integer nfiles;
  // element memories (64 bits: $readmemh pads shorter lines with zeros)
  reg [63:0] left [0:65535];
  reg [63:0] right [0:65535];
  reg [63:0] dst [0:65535];
  reg [0:0] ldef [0:65535];
  reg [0:0] rdef [0:65535];
  reg [0:0] ddef [0:65535];
  // fields.txt
  integer fcase, mode, func, dtype, pe_mask, pad_field, pad_value, cmode, sat, canon, dstdt, rmode, lay;
  integer local_bytes, matrix_bytes, committed, reason_code;
  integer pad_of [0:65535];
  // cases.txt (binary instruction: roles left, right, dst)
  integer c, pe, r1, r2, sl, sw;
  integer l_line, l_n, l_row, l_col, l_vr, l_vc, l_lay;
  integer r_line, r_n, r_row, r_col, r_vr, r_vc, r_lay;
  integer d_line, d_n, d_row, d_col, d_vr, d_vc, d_lay;
  integer i, row, col, bits, k;
  reg [63:0] want, mask;
  reg sub_op;
  // stream files
  integer tcase, tpe, ttile, loc, kind, cap, repr, fl;
  integer x0, x1, x2, x3, x4, x5, x6, tdigits, tline, tn;

  // index.txt: "name count" lines after the header
  task read_index;
    begin
      path = {dir, "/index.txt"};
      fi = $fopen(path, "r");
      if (fi == 0) begin $display("FAIL cannot open index.txt"); $finish; end
      rc = $fgets(line, fi);                       // header
      nfiles = 0;
      while (!$feof(fi)) begin
        rc = $fscanf(fi, "%s %d\n", name, n);
        if (rc == 2) begin
          names[nfiles] = name; counts[nfiles] = n; nfiles = nfiles + 1;
          $display("INDEX %0s %0d", name, n);
        end
      end
      $fclose(fi);
    end
  endtask

  // count a file's lines (an index file's "# " header not counted) against index.txt
  task recount;
    integer j, lines;
    begin
      for (j = 0; j < nfiles; j = j + 1) begin
        if (names[j] != "cases" && names[j] != "lanes") begin
          $sformat(path, "%0s/%0s", dir, names[j]);
          fd = $fopen(path, "r");
          if (fd == 0) begin $display("FAIL cannot open %0s", names[j]); fails = fails + 1; end
          else begin
            lines = 0;
            while ($fgets(line, fd)) lines = lines + 1;
            $fclose(fd);
            if (names[j][32:1] == ".txt") lines = lines - 1;       // an index file's "# " header
            if (lines != counts[j]) begin
              $display("FAIL %0s holds %0d lines, index.txt says %0d", names[j], lines, counts[j]);
              fails = fails + 1;
            end
            $display("COUNT %0s %0d", names[j], lines);
          end
        end
      end
    end
  endtask

  initial begin
    fails = 0; checked = 0; pads = 0;
    if ($value$plusargs("single=%s", dir)) begin
      read_index;
      recount;
      sub_op = $test$plusargs("sub");
      if (!$value$plusargs("bits=%d", bits)) bits = 16;
      mask = (bits == 64) ? ~64'd0 : ((64'd1 << bits) - 1);
      path = {dir, "/left.hex"};      $readmemh(path, left);
      path = {dir, "/right.hex"};     $readmemh(path, right);
      path = {dir, "/dst.hex"};       $readmemh(path, dst);
      path = {dir, "/left.def.hex"};  $readmemh(path, ldef);
      path = {dir, "/right.def.hex"}; $readmemh(path, rdef);
      path = {dir, "/dst.def.hex"};   $readmemh(path, ddef);
      // fields.txt: one line per case
      path = {dir, "/fields.txt"};
      fd = $fopen(path, "r");
      rc = $fgets(line, fd);
      while ($fgets(line, fd)) begin
        rc = $sscanf(line, "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %s %s %s", fcase, mode, func, dtype,
                     pe_mask, pad_field, pad_value, cmode, sat, canon, dstdt, rmode, lay, local_bytes, matrix_bytes,
                     committed, reason_code, w0, w1, w2);
        pad_of[fcase] = pad_value;
        $display("FIELDS %0d %0d %0d %0d %0d %0d %0d %0d %0s %0s", fcase, func, dtype, pad_value, pe_mask,
                 local_bytes, matrix_bytes, reason_code, w0, w2);
      end
      $fclose(fd);
      // cases.txt: one line per (case, PE)
      path = {dir, "/cases.txt"};
      fd = $fopen(path, "r");
      rc = $fgets(line, fd);
      while ($fgets(line, fd)) begin
        rc = $sscanf(line, "%d %d %s %s %s %d %d %d %d %d %d %d %d %d %d %d %s %d %d %d %d %d %d %d %s %d %d %d %d %d %d %d",
                     c, pe, w0, w1, w2, r1, r2, sl, sw,
                     l_line, l_n, l_row, l_col, l_vr, l_vc, l_lay, w3,
                     r_line, r_n, r_row, r_col, r_vr, r_vc, r_lay, w4,
                     d_line, d_n, d_row, d_col, d_vr, d_vc, d_lay);
        if (w0 == "commit" && d_lay == 0 && l_lay == 0 && r_lay == 0 && d_n > 0) begin
          for (i = 0; i < d_n; i = i + 1) begin
            row = i / d_col; col = i % d_col;                     // NORM: p = r * Col + c
            if (row < d_vr && col < d_vc) begin
              k = row * l_col + col;
              want = sub_op ? (left[l_line + k] - right[r_line + row * r_col + col]) & mask
                            : (left[l_line + k] + right[r_line + row * r_col + col]) & mask;
              if (ddef[d_line + i] !== 1'b1 || dst[d_line + i] !== want) begin
                $display("FAIL case %0d PE %0d element %0d: expected %h defined, got %h def %b", c, pe, i, want,
                         dst[d_line + i], ddef[d_line + i]);
                fails = fails + 1;
              end
              checked = checked + 1;
            end else begin
              // outside the valid rectangle: Null padding leaves it undefined, others define it
              if (ddef[d_line + i] !== (pad_of[c] == 3 ? 1'b0 : 1'b1)) begin
                $display("FAIL case %0d PE %0d element %0d: padding %0d, dst_def %b", c, pe, i, pad_of[c],
                         ddef[d_line + i]);
                fails = fails + 1;
              end
              pads = pads + 1;
            end
          end
        end
      end
      $fclose(fd);
      $display("CHECKED %0d %0d", checked, pads);
    end
    if ($value$plusargs("stream=%s", dir)) begin
      read_index;
      recount;
      path = {dir, "/machine.txt"};
      fd = $fopen(path, "r");
      rc = $fgets(line, fd);
      while ($fgets(line, fd)) begin
        rc = $sscanf(line, "%d %d %d %d %s %s", fcase, local_bytes, matrix_bytes, reason_code, w0, w1);
        $display("MACHINE %0d %0d %0d %0d %0s %0s", fcase, local_bytes, matrix_bytes, reason_code, w0, w1);
      end
      $fclose(fd);
      path = {dir, "/tile_info.txt"};
      fd = $fopen(path, "r");
      path = {dir, "/tiles.txt"};
      fi = $fopen(path, "r");
      rc = $fgets(line, fd);
      rc = $fgets(line, fi);
      while ($fgets(line, fd)) begin
        rc = $sscanf(line, "%d %d %d %d %d %d %d %d", tcase, tpe, ttile, loc, kind, cap, repr, fl);
        $display("TILE %0d %0d %0d %0d %0d %0d %0d %0d", tcase, tpe, ttile, loc, kind, cap, repr, fl);
        rc = $fgets(line, fi);
        // tiles.txt: case pe tile kind datatype row col valid_row valid_col layout digits line n
        rc = $sscanf(line, "%d %d %d %s %s %d %d %d %d %d %d %d %d", x0, x1, x2, w0, w1, row, col, x3, x4, x5,
                     tdigits, tline, tn);
        if (x0 != tcase || x1 != tpe || x2 != ttile) begin
          $display("FAIL tile_info.txt and tiles.txt disagree at case %0d", tcase); fails = fails + 1;
        end
        if (repr == 0 && tn != row * col) begin
          $display("FAIL case %0d tile %0d: n %0d, not Row x Col", tcase, ttile, tn); fails = fails + 1;
        end
      end
      $fclose(fd);
      $fclose(fi);
    end
    if (fails == 0) $display("PASS");
    $finish;
  end
endmodule
