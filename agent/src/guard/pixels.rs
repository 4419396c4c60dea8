//! Images in and out of `redline guard`: the verified after-shot as the panel uploaded it
//! (WebP; PNG or JPEG are refused by name), the browser's PNG screenshots, and PNG for
//! what the guard uploads.

use std::io::Cursor;

use super::compare::Pixels;

/// Decodes a WebP or PNG image to RGBA.
pub fn decode(bytes: &[u8]) -> Result<Pixels, String> {
    if bytes.starts_with(b"\x89PNG") {
        return decode_png(bytes);
    }
    if bytes.len() > 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return decode_webp(bytes);
    }
    Err("the image is neither WebP nor PNG".to_owned())
}

fn decode_webp(bytes: &[u8]) -> Result<Pixels, String> {
    let failed = |e: image_webp::DecodingError| format!("unreadable WebP: {e}");
    let mut decoder = image_webp::WebPDecoder::new(Cursor::new(bytes)).map_err(failed)?;
    let (width, height) = decoder.dimensions();
    let has_alpha = decoder.has_alpha();
    let mut buf = vec![0; decoder.output_buffer_size().ok_or("a WebP too large to decode")?];
    decoder.read_image(&mut buf).map_err(failed)?;
    let rgba = if has_alpha { buf } else { buf.chunks(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect() };
    Ok(Pixels { width, height, rgba })
}

pub fn decode_png(bytes: &[u8]) -> Result<Pixels, String> {
    let failed = |e: png::DecodingError| format!("unreadable PNG: {e}");
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8() | png::Transformations::ALPHA);
    let mut reader = decoder.read_info().map_err(failed)?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("a PNG too large to decode")?];
    let info = reader.next_frame(&mut buf).map_err(failed)?;
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::GrayscaleAlpha => buf.chunks(2).flat_map(|p| [p[0], p[0], p[0], p[1]]).collect(),
        other => return Err(format!("unexpected PNG colour type {other:?}")),
    };
    Ok(Pixels { width: info.width, height: info.height, rgba })
}

pub fn encode_png(image: &Pixels) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, image.width, image.height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&image.rgba).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_round_trips_and_other_bytes_are_refused() {
        let image = Pixels::filled(3, 2, [1, 2, 3, 255]);
        assert_eq!(decode(&encode_png(&image).unwrap()).unwrap(), image);
        assert!(decode(b"GIF89a").is_err());
    }
}
